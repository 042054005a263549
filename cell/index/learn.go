package index

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// LearnConfig tunes a Learner: the holdings a cell learns from its own
// routing decisions rather than from engine events.
type LearnConfig struct {
	// SpeculativeTTL is how long a speculative block lives: from the moment
	// a request is routed (Speculate) until the engine's events confirm it
	// or this time passes. 0 turns speculative entries off.
	SpeculativeTTL time.Duration
	// ApproximateTTL is how long an approximate block (a pod without
	// events) stays held after the last request that used it (Touch).
	ApproximateTTL time.Duration
	// MaxBlocksPerSlot bounds each kind of learned block of one slot
	// (speculative, approximate) unless SetApproximate gives the slot its
	// own bound: past it the least recently used of the kind are dropped,
	// deepest first.
	MaxBlocksPerSlot int
}

// DefaultLearnConfig returns the defaults: speculative entries for 2 s,
// approximate blocks for 120 s after their last use, at most 65,536
// learned blocks (1M tokens of 16) of each kind per slot.
func DefaultLearnConfig() LearnConfig {
	return LearnConfig{SpeculativeTTL: 2 * time.Second, ApproximateTTL: 120 * time.Second, MaxBlocksPerSlot: 1 << 16}
}

// Validate reports the first field that is out of range.
func (c LearnConfig) Validate() error {
	switch {
	case c.SpeculativeTTL < 0:
		return fmt.Errorf("%w: SpeculativeTTL must not be negative, got %v", ErrInvalidConfig, c.SpeculativeTTL)
	case c.ApproximateTTL <= 0:
		return fmt.Errorf("%w: ApproximateTTL must be positive, got %v", ErrInvalidConfig, c.ApproximateTTL)
	case c.MaxBlocksPerSlot < 1:
		return fmt.Errorf("%w: MaxBlocksPerSlot must be at least 1, got %d", ErrInvalidConfig, c.MaxBlocksPerSlot)
	}
	return nil
}

// ErrLearnerAttached is returned by NewLearner for an index that has one.
var ErrLearnerAttached = errors.New("index: a learner is already attached")

// Learner keeps the blocks a cell learns from its own routing decisions in
// the index, beside those engine events report: speculative blocks, which
// bridge the time between routing a request and its engine's events, and
// approximate blocks, the only knowledge of a pod that publishes no events.
// Learned blocks are ordinary holders in the index (Match reads them like
// any other); the Learner keeps, per slot, which holder bits are learned,
// when each expires, and their recency, and takes the bits away again. See
// the package doc. All methods are safe for concurrent use.
type Learner struct {
	ix     *Index
	cfg    LearnConfig
	slots  [MaxPods]learnSlot
	active [4]atomic.Uint64 // slots with learned blocks or in approximate mode
	approx [4]atomic.Uint64 // slots in approximate mode
	sizes  [numKinds]atomic.Int64
	stats  learnCounters
}

// learnSlot is one slot's learned state. mu also serialises the exact
// writes of the slot (Index.Apply), so that a learned bit and an exact bit
// are never told apart on a stale view.
type learnSlot struct {
	mu     sync.Mutex
	approx bool
	max    int // 0: the learner's default
	set    *lset
	ops    []Op     // write buffer
	hashes []lblock // removal buffer
}

type learnCounters struct {
	speculated, learned, confirmed, expired, evicted, cut, dropped atomic.Uint64
}

// NewLearner attaches a learner to ix and returns it. Attach it before the
// index is shared: from then on every exact write (Apply, Store, Remove)
// takes its slots' learner locks, and Match reports which depths are
// learned.
func NewLearner(ix *Index, cfg LearnConfig) (*Learner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Learner{ix: ix, cfg: cfg}
	if !ix.learn.CompareAndSwap(nil, l) {
		return nil, ErrLearnerAttached
	}
	return l, nil
}

// Config returns the learner's configuration.
func (l *Learner) Config() LearnConfig { return l.cfg }

// setBit sets or clears slot s's bit in b, writing only when it changes
// (the words are read by every query and every exact write).
func setBit(b *[4]atomic.Uint64, s Slot, on bool) {
	w, bit := &b[s>>6], uint64(1)<<(s&63)
	if (w.Load()&bit != 0) == on {
		return
	}
	if on {
		w.Or(bit)
	} else {
		w.And(^bit)
	}
}

func (l *Learner) activeSet() HostBitmap {
	return HostBitmap{l.active[0].Load(), l.active[1].Load(), l.active[2].Load(), l.active[3].Load()}
}

func (l *Learner) approxSet() HostBitmap {
	return HostBitmap{l.approx[0].Load(), l.approx[1].Load(), l.approx[2].Load(), l.approx[3].Load()}
}

// update refreshes slot s's bits in active and approx; the caller holds
// its lock.
func (l *Learner) update(s Slot) {
	st := &l.slots[s]
	setBit(&l.active, s, st.approx || (st.set != nil && st.set.len() > 0))
	setBit(&l.approx, s, st.approx)
}

// SetApproximate says whether slot s is a pod without events, whose
// holdings are all learned (approximate), and bounds its learned blocks
// (maxBlocks 0: the configured default). Turning approximate mode off drops
// the slot's approximate blocks. A slot leaves approximate mode by itself
// when an exact write for it arrives (the pod started publishing).
func (l *Learner) SetApproximate(s Slot, approx bool, maxBlocks int) {
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	if !l.ix.isAlive(s) {
		return
	}
	st.max = max(0, maxBlocks)
	if st.approx && !approx {
		l.dropApprox(s)
	}
	st.approx = approx
	l.bound(s)
	l.flush(s)
	l.update(s)
}

// Approximate reports whether slot s is in approximate mode.
func (l *Learner) Approximate(s Slot) bool {
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.approx
}

// Speculate records that slot s is about to hold chain (a request was just
// routed to it): every block of chain the slot does not hold becomes a
// speculative block expiring SpeculativeTTL after now, and the learned
// blocks of chain it holds are refreshed (an approximate block counts as
// used). It returns the number of blocks added. It does nothing when
// speculative entries are off or the slot is not alive.
func (l *Learner) Speculate(s Slot, chain []BlockHash, now time.Time) int {
	if l.cfg.SpeculativeTTL <= 0 || len(chain) == 0 {
		return 0
	}
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	if !l.ix.isAlive(s) {
		return 0
	}
	added := l.learn(s, chain, kindSpec, now)
	l.stats.speculated.Add(uint64(added))
	return added
}

// Touch records, for a slot in approximate mode, that a request over chain
// returned its first token there: the slot holds every block of chain as
// approximate until ApproximateTTL passes without another use. It returns
// the number of blocks added, and does nothing for a slot with events.
func (l *Learner) Touch(s Slot, chain []BlockHash, now time.Time) int {
	if len(chain) == 0 {
		return 0
	}
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.approx || !l.ix.isAlive(s) {
		return 0
	}
	added := l.learn(s, chain, kindApprox, now)
	l.stats.learned.Add(uint64(added))
	return added
}

// learn adds chain to slot s as kind k (see Speculate and Touch). The
// caller holds the slot's lock.
func (l *Learner) learn(s Slot, chain []BlockHash, k uint8, now time.Time) int {
	st := &l.slots[s]
	for i, h := range chain {
		if h == 0 { // the reserved hash, which the index never holds
			chain = chain[:i]
			break
		}
	}
	if len(chain) == 0 {
		return 0
	}
	if st.set == nil {
		st.set = newLset(&l.sizes)
	}
	set := st.set
	d := l.heldDepth(s, chain)
	// Learned blocks among the held ones are a suffix [e, d): the slot's
	// exact blocks are prefix-closed and never learned at the same time.
	e := d
	if d > 0 {
		if _, ok := set.lookup(chain[d-1]); ok {
			e = firstTrue(0, d-1, func(i int) bool { _, ok := set.lookup(chain[i]); return ok })
		}
	}
	t := now.UnixNano()
	ttl := func(kind uint8) int64 {
		if kind == kindApprox {
			return t + int64(l.cfg.ApproximateTTL)
		}
		return t + int64(l.cfg.SpeculativeTTL)
	}
	// Store the new blocks first: the cap may refuse some.
	st.ops = st.ops[:0]
	for i := d; i < len(chain); i++ {
		st.ops = append(st.ops, Op{Kind: OpStore, Slot: s, Tier: TierGPU, Hash: chain[i], Pos: int32(i), Page: PageKey(chain, i)})
	}
	n := len(chain)
	if len(st.ops) > 0 {
		if res := l.ix.apply(st.ops, nil); res.CapDrops > 0 {
			n -= res.CapDrops
		}
	}
	// Create the new nodes root first (each needs its parent), then push
	// every node of chain[e:n] to its list's tail deepest first.
	for i := d; i < n; i++ {
		var p int32 = nilNode
		var ph BlockHash
		if i > 0 {
			ph = chain[i-1]
			if j, ok := set.lookup(ph); ok {
				p = j
			}
		}
		set.add(chain[i], ph, PageKey(chain, i), p, i+1, k, ttl(k))
	}
	for i := n - 1; i >= e; i-- {
		j, _ := set.lookup(chain[i])
		kind := k
		if set.nodes[j].kind == kindApprox {
			kind = kindApprox // used again: an approximate block stays one
		}
		set.refresh(j, kind, ttl(kind))
	}
	l.bound(s)
	l.flush(s)
	l.update(s)
	return max(0, n-d)
}

// heldDepth returns how many leading blocks of chain slot s holds. Holdings
// are prefix-closed, so it bisects. The caller holds the slot's lock, so
// no exact write for the slot runs meanwhile.
func (l *Learner) heldDepth(s Slot, chain []BlockHash) int {
	if !l.ix.holdsAt(s, chain, 0) {
		return 0
	}
	if l.ix.holdsAt(s, chain, len(chain)-1) {
		return len(chain)
	}
	// chain[0] is held, chain[n-1] not: the first block not held.
	return firstTrue(1, len(chain)-1, func(i int) bool { return !l.ix.holdsAt(s, chain, i) })
}

// firstTrue returns the least i in [lo, hi] with f(i), given that f is
// monotone (false then true) and f(hi) holds.
func firstTrue(lo, hi int, f func(int) bool) int {
	for lo < hi {
		mid := lo + (hi-lo)/2
		if f(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// bound drops the slot's least recently used learned blocks past its
// bound, each kind against the bound on its own. Approximate blocks are
// what the pod's engine has stored, so they are bounded like its cache,
// which evicts what it used least when it stores a prompt's blocks, at the
// prefill's end, where Touch turns speculative blocks into approximate
// ones. Speculative blocks are prefills still running, in no cache yet:
// counted against the same bound, they dropped stored blocks the engine
// still held whenever many requests were in flight to the pod. Heads of
// the lists are leaves (or have learned children of the other kind only,
// which go with them), so the holdings stay prefix-closed. The caller
// holds the lock and flushes.
func (l *Learner) bound(s Slot) {
	st := &l.slots[s]
	if st.set == nil {
		return
	}
	limit := l.cfg.MaxBlocksPerSlot
	if st.max > 0 {
		limit = st.max
	}
	for _, k := range [...]uint8{kindApprox, kindSpec} {
		for st.set.lists[k].n > limit {
			before := len(st.hashes)
			st.hashes = st.set.remove(st.set.oldest(k), st.hashes)
			l.stats.evicted.Add(uint64(len(st.hashes) - before))
		}
	}
}

// dropApprox removes every approximate block of slot s (and its learned
// subtree). The caller holds the lock and flushes.
func (l *Learner) dropApprox(s Slot) {
	st := &l.slots[s]
	if st.set == nil {
		return
	}
	for {
		i := st.set.oldest(kindApprox)
		if i == nilNode {
			return
		}
		before := len(st.hashes)
		st.hashes = st.set.remove(i, st.hashes)
		l.stats.dropped.Add(uint64(len(st.hashes) - before))
	}
}

// flush removes the holder bits of the blocks the slot's set let go of.
// The caller holds the lock.
func (l *Learner) flush(s Slot) {
	st := &l.slots[s]
	if len(st.hashes) == 0 {
		return
	}
	st.ops = st.ops[:0]
	for _, b := range st.hashes {
		st.ops = append(st.ops, Op{Kind: OpRemove, Slot: s, Tier: TierGPU, Hash: b.hash, Pos: b.pos, Page: b.page})
	}
	st.hashes = st.hashes[:0]
	l.ix.apply(st.ops, nil)
}

// Expire removes every learned block whose time to live ended at or before
// now and returns how many it removed. The cell calls it periodically; a
// learned block therefore lives up to its TTL plus that period.
func (l *Learner) Expire(now time.Time) int {
	t := now.UnixNano()
	total := 0
	l.activeSet().ForEach(func(s Slot) {
		st := &l.slots[s]
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.set == nil {
			return
		}
		for k := uint8(0); k < numKinds; k++ {
			for {
				i := st.set.oldest(k)
				if i == nilNode || st.set.nodes[i].expires > t {
					break
				}
				st.hashes = st.set.remove(i, st.hashes)
			}
		}
		total += len(st.hashes)
		l.flush(s)
		l.update(s)
	})
	l.stats.expired.Add(uint64(total))
	return total
}

// lockSlots takes the learner locks of the slots ops write, in slot order.
func (l *Learner) lockSlots(ops []Op) HostBitmap {
	var b HostBitmap
	for i := range ops {
		b = b.Set(ops[i].Slot)
	}
	b.ForEach(func(s Slot) { l.slots[s].mu.Lock() })
	return b
}

func (l *Learner) unlockSlots(b HostBitmap) {
	b.ForEach(func(s Slot) { l.slots[s].mu.Unlock() })
}

// reconcile folds exact writes that were just applied into the learned
// state. A store confirms a learned block (the engine holds it; it is no
// longer the learner's to expire); a removal takes the block's learned
// descendants with it (the pod cannot reuse them). An exact write to a slot
// in approximate mode means the pod publishes events now: the slot leaves
// approximate mode and its approximate blocks go. The caller holds the
// locks of every slot in ops.
func (l *Learner) reconcile(ops []Op) {
	var switched, touched HostBitmap
	for i := range ops {
		op := &ops[i]
		st := &l.slots[op.Slot]
		if op.Hash == 0 || (!st.approx && st.set == nil) {
			continue
		}
		touched = touched.Set(op.Slot)
		if st.approx {
			st.approx = false
			switched = switched.Set(op.Slot)
		}
		if st.set == nil {
			continue
		}
		j, ok := st.set.lookup(op.Hash)
		switch op.Kind {
		case OpStore:
			if ok {
				st.set.confirm(j)
				l.stats.confirmed.Add(1)
			}
		case OpRemove:
			before := len(st.hashes)
			st.hashes = st.set.cut(op.Hash, st.hashes)
			l.stats.cut.Add(uint64(len(st.hashes) - before))
		}
	}
	switched.ForEach(func(s Slot) { l.dropApprox(s) })
	touched.ForEach(func(s Slot) {
		l.flush(s)
		l.update(s)
	})
}

// forget drops slot s's learned state without touching the index (the
// caller clears or sweeps the slot's bits). keepMode keeps approximate mode
// and the bound (ClearPod); otherwise the slot returns to the defaults
// (Kill). The caller holds the slot's lock.
func (l *Learner) forget(s Slot, keepMode bool) {
	st := &l.slots[s]
	if st.set != nil {
		st.set.clear()
		st.set = nil
	}
	st.ops, st.hashes = nil, nil
	if !keepMode {
		st.approx, st.max = false, 0
	}
	l.update(s)
}

// splitLearned records in r, for the pods in pods with events that r
// matched and that hold learned blocks, where their exact depth ends: the
// learned blocks of a chain are a suffix of what the slot holds of it, so a
// map lookup at the matched depth rules a pod out, and a bisection finds
// the boundary otherwise.
func (l *Learner) splitLearned(chain []BlockHash, r *MatchResult, pods HostBitmap) {
	pods = pods.And(r.matched).And(l.activeSet()).AndNot(r.approx)
	pods.ForEach(func(s Slot) {
		d := r.Depth(s)
		if d == 0 {
			return
		}
		st := &l.slots[s]
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.set == nil {
			return
		}
		if _, ok := st.set.lookup(chain[d-1]); !ok {
			return
		}
		e := firstTrue(0, d-1, func(i int) bool { _, ok := st.set.lookup(chain[i]); return ok })
		r.markLearned(s, e, false)
	})
}

// ForEachApproximate calls fn for every approximate block with its depth in
// its chain: what a cell adds to its gossip summary for pods without
// events. Speculative blocks are left out: they live shorter than a
// summary generation. It locks one slot at a time.
func (l *Learner) ForEachApproximate(fn func(h BlockHash, depth int)) {
	l.activeSet().ForEach(func(s Slot) {
		st := &l.slots[s]
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.set == nil {
			return
		}
		for i := st.set.lists[kindApprox].head; i != nilNode; i = st.set.nodes[i].newer {
			fn(st.set.nodes[i].hash, int(st.set.nodes[i].depth))
		}
	})
}

// LearnStats are a learner's figures for metrics.
type LearnStats struct {
	// SpeculativeBlocks and ApproximateBlocks are the learned blocks held
	// now, summed over slots.
	SpeculativeBlocks, ApproximateBlocks int64
	// ApproximateSlots counts slots in approximate mode.
	ApproximateSlots int
	// Speculated and Learned count blocks added by Speculate and Touch.
	Speculated, Learned uint64
	// Confirmed counts learned blocks an engine's events then stored.
	Confirmed uint64
	// Expired, Evicted, Cut and Dropped count learned blocks removed: their
	// time to live ended, the slot's bound, a removal event of theirs or of
	// an ancestor, the slot leaving approximate mode.
	Expired, Evicted, Cut, Dropped uint64
}

// Stats returns the learner's current figures.
func (l *Learner) Stats() LearnStats {
	st := LearnStats{
		SpeculativeBlocks: l.sizes[kindSpec].Load(), ApproximateBlocks: l.sizes[kindApprox].Load(),
		Speculated: l.stats.speculated.Load(), Learned: l.stats.learned.Load(), Confirmed: l.stats.confirmed.Load(),
		Expired: l.stats.expired.Load(), Evicted: l.stats.evicted.Load(), Cut: l.stats.cut.Load(), Dropped: l.stats.dropped.Load(),
	}
	st.ApproximateSlots = l.approxSet().Count()
	return st
}

// Learned returns how many learned blocks slot s holds, by kind.
func (l *Learner) Learned(s Slot) (speculative, approximate int) {
	st := &l.slots[s]
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.set == nil {
		return 0, 0
	}
	return st.set.lists[kindSpec].n, st.set.lists[kindApprox].n
}
