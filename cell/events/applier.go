package events

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// IndexWriter is the part of the index the Applier writes to; *index.Index
// implements it. All methods may be called concurrently.
type IndexWriter interface {
	// Register returns the live slot of a holder id, allocating one if new.
	Register(id string) (index.Slot, error)
	// Apply applies a batch of ops; it does not keep ops.
	Apply(ops []index.Op) index.ApplyResult
	// ClearPod removes every block of a live slot.
	ClearPod(s index.Slot)
	// Kill retires a slot; the index sweeps it in the background.
	Kill(s index.Slot)
}

// Applier is the Sink that feeds the index: it orders each holder's batches
// (SeqTracker), translates engine blocks to router blocks and writes them to
// the index. ApplyBatch may be called concurrently for different holders;
// one holder's batches must come from one goroutine, in order.
type Applier struct {
	cfg    Config
	ix     IndexWriter
	reg    *Registry
	now    func() time.Time
	hasher blockhash.Hasher
	models map[string]bool
	// podModel is the model of each configured pod that names one;
	// aliases maps a configured pod's address to its id (see podOf).
	podModel map[string]string
	aliases  map[string]string
	// static holds the configured pods' ids; a pod the cell discovered
	// is known through the registry (Registry.Managed).
	static map[string]bool

	counters Counters
	// bounds is the bound of indexed router blocks of each configured pod
	// that sets one (PodSpec.MaxIndexBlocks); evicted counts evictions per
	// pod (evict.go).
	bounds  map[string]int
	evicted evictionLog

	mu      sync.RWMutex
	holders map[string]*holder
}

var (
	_ Sink        = (*Applier)(nil)
	_ IndexWriter = (*index.Index)(nil)
)

// NewApplier returns an Applier writing to ix. reg, if not nil, is told
// about every batch; now is the clock (nil means time.Now).
func NewApplier(cfg Config, ix IndexWriter, reg *Registry, now func() time.Time) (*Applier, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hasher, err := blockhash.NewHasher(cfg.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	if now == nil {
		now = time.Now
	}
	a := &Applier{cfg: cfg, ix: ix, reg: reg, now: now, hasher: hasher, holders: make(map[string]*holder),
		podModel: podModels(cfg.Pods), aliases: podAliases(cfg.Pods), bounds: podBounds(cfg.Pods), static: make(map[string]bool, len(cfg.Pods))}
	for _, p := range cfg.Pods {
		a.static[p.ID] = true
	}
	if len(cfg.Models) > 0 {
		a.models = make(map[string]bool, len(cfg.Models))
		for _, m := range cfg.Models {
			a.models[m] = true
		}
	}
	return a, nil
}

// Counters returns the Applier's counters.
func (a *Applier) Counters() *Counters { return &a.counters }

// ApplyBatch applies b completely or not at all (see the package doc). It
// returns nil when b was applied, ctx's error when ctx is done (nothing
// changed), and otherwise an error wrapping ErrDuplicate, ErrGap (a
// *GapError), ErrUnknownPod, ErrUnknownModel, ErrInvalid or ErrNoSlot, counted under the
// matching DropReason. An invalid batch still consumes its sequence number
// (a replay would bring the same bytes again); an invalid batch numbered 0
// after a higher number still clears the holder, since the engine restarted.
func (a *Applier) ApplyBatch(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	verr := validateBatch(b)
	if b.Pod == "" {
		a.counters.BatchesDropped[ReasonInvalid].Add(1)
		return verr
	}
	pod := a.podOf(b.Pod)
	if a.cfg.RefuseUnknownPods && !a.static[pod] && !a.reg.Managed(pod) {
		a.counters.BatchesDropped[ReasonUnknownPod].Add(1)
		err := fmt.Errorf("%w: %q is neither a configured pod's id nor its address", ErrUnknownPod, b.Pod)
		a.dropped(pod, holderID(pod, b.DPRank), ReasonUnknownPod, err.Error())
		return err
	}
	model := a.modelOf(pod, b.Model)
	if a.models != nil && !a.models[model] {
		a.counters.BatchesDropped[ReasonUnknownModel].Add(1)
		err := fmt.Errorf("%w: %q from %s", ErrUnknownModel, model, holderID(pod, b.DPRank))
		a.dropped(pod, holderID(pod, b.DPRank), ReasonUnknownModel, err.Error())
		return err
	}
	h, err := a.holder(pod, b.DPRank)
	if err != nil {
		a.counters.BatchesDropped[ReasonNoSlot].Add(1)
		return err
	}
	defer h.mu.Unlock()
	now := a.now()

	dec := h.seq.Next(b.Seq)
	switch dec.Action {
	case SeqDuplicate:
		a.counters.BatchesDropped[ReasonDuplicate].Add(1)
		a.observe(h, b, false, now)
		return fmt.Errorf("%w: %s seq %d", ErrDuplicate, h.id, b.Seq)
	case SeqGap:
		if !dec.Pending {
			a.counters.Gaps.Add(1)
		}
		a.counters.BatchesDropped[ReasonGap].Add(1)
		a.observe(h, b, false, now)
		return &GapError{Holder: h.id, From: dec.From, To: dec.To, Pending: dec.Pending}
	}
	h.resume = false // applied in order: nothing left to resume
	wipe := false
	if dec.Action == SeqRestart {
		a.counters.Restarts.Add(1)
		a.counters.Clears.Add(1)
		h.clearState()
		wipe = true
	}
	if verr != nil {
		if wipe {
			a.ix.ClearPod(h.slot)
		}
		a.counters.BatchesDropped[ReasonInvalid].Add(1)
		a.observe(h, b, true, now)
		a.dropped(h.pod, h.id, ReasonInvalid, verr.Error())
		return verr
	}

	h.ops = h.ops[:0]
	h.limit, h.limitReason = a.limitOf(h)
	if a.translate(h, b, model) {
		wipe = true
	}
	if wipe {
		a.ix.ClearPod(h.slot)
	}
	if len(h.ops) > 0 {
		if res := a.ix.Apply(h.ops); res.CapDrops > 0 {
			a.relieve(h)
		}
		stores := 0
		for i := range h.ops {
			if h.ops[i].Kind == index.OpStore {
				stores++
			}
		}
		a.counters.BlocksStored.Add(uint64(stores))
		a.counters.BlocksRemoved.Add(uint64(len(h.ops) - stores))
	}
	a.flushEvictions(h)
	a.counters.Batches.Add(1)
	if b.TS > 0 {
		a.counters.Lag.Observe(now.Sub(engineTime(b.TS)))
	}
	a.observe(h, b, true, now)
	return nil
}

// observe tells the registry about a batch of h.
func (a *Applier) observe(h *holder, b *Batch, applied bool, now time.Time) {
	if a.reg == nil {
		return
	}
	_, _, degraded := h.seq.Degraded()
	a.reg.ObserveBatch(h.pod, h.id, h.slot, b.Seq, applied, degraded, now)
}

// holder returns the holder of pod's rank, locked, creating it and
// registering its slot if new.
func (a *Applier) holder(pod string, rank int) (*holder, error) {
	id := holderID(pod, rank)
	for {
		a.mu.RLock()
		h := a.holders[id]
		a.mu.RUnlock()
		if h == nil {
			a.mu.Lock()
			if h = a.holders[id]; h == nil {
				slot, err := a.ix.Register(id)
				if err != nil {
					a.mu.Unlock()
					return nil, fmt.Errorf("%w: %s: %v", ErrNoSlot, id, err)
				}
				h = &holder{id: id, pod: pod, slot: slot, bound: a.boundOf(pod)}
				a.holders[id] = h
			}
			a.mu.Unlock()
		}
		h.mu.Lock()
		if !h.dead {
			return h, nil
		}
		h.mu.Unlock() // killed meanwhile: look again
	}
}

// Kill kills every holder of pod: their index slots die (the index sweeps
// them) and their state is freed. A later batch of the pod starts afresh in
// a new slot. It returns the number of holders killed.
func (a *Applier) Kill(pod string) int {
	a.mu.Lock()
	var victims []*holder
	for id, h := range a.holders {
		if h.pod == pod {
			victims = append(victims, h)
			delete(a.holders, id)
		}
	}
	a.mu.Unlock()
	a.evicted.forget(pod)
	for _, h := range victims {
		h.mu.Lock()
		h.dead = true
		a.ix.Kill(h.slot)
		h.clearState()
		h.ops, h.toks, h.hashes = nil, nil, nil
		h.mu.Unlock()
		a.counters.Kills.Add(1)
	}
	return len(victims)
}

// Tick asks the registry which pods died at now and kills them; it returns
// their ids. Without a registry it does nothing.
func (a *Applier) Tick(now time.Time) []string {
	if a.reg == nil {
		return nil
	}
	dead := a.reg.Tick(now)
	for _, pod := range dead {
		a.Kill(pod)
	}
	return dead
}

// GiveUp abandons the repair of holder's gap: the holder's index slot is
// cleared (its view lost events), and its next batch is accepted as a new
// baseline. It reports false if holder was not waiting for a replay.
func (a *Applier) GiveUp(holderID string) bool {
	return a.reset(holderID, func(h *holder) bool {
		_, _, degraded := h.seq.Degraded()
		if degraded {
			a.counters.GiveUps.Add(1)
		}
		return degraded
	})
}

// ResetHolder forgets what the holder of pod's rank (rank -1: none) has
// stored: its index slot is cleared and its next batch, whatever its
// number, is a new baseline. A transport calls it when it learns that what
// it applied was filed under the wrong identity (a model the live topic
// contradicts), before it replays the engine's buffer again. It reports
// false when there is no such holder.
func (a *Applier) ResetHolder(pod string, rank int) bool {
	return a.reset(holderID(a.podOf(pod), rank), func(*holder) bool { return true })
}

// reset clears a live holder's blocks and sequence, when ok (called with
// the holder locked) agrees, and reports whether it did.
func (a *Applier) reset(holderID string, ok func(*holder) bool) bool {
	a.mu.RLock()
	h := a.holders[holderID]
	a.mu.RUnlock()
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dead || !ok(h) {
		return false
	}
	h.clearState()
	a.ix.ClearPod(h.slot)
	h.seq.Reset()
	a.counters.Clears.Add(1)
	if a.reg != nil {
		a.reg.SetDegraded(h.pod, h.id, false)
	}
	return true
}

// TrackedBlocks returns the number of engine blocks tracked for holder.
func (a *Applier) TrackedBlocks(holderID string) int {
	a.mu.RLock()
	h := a.holders[holderID]
	a.mu.RUnlock()
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chains.len()
}

// dropped tells Config.OnDrop about a drop that leaves blocks unindexed.
func (a *Applier) dropped(pod, holder string, r DropReason, detail string) {
	if a.cfg.OnDrop == nil {
		return
	}
	switch r {
	case ReasonDuplicate, ReasonGap, ReasonOtherGroup:
		return // ordering, or another group of a hybrid model: routine
	}
	a.cfg.OnDrop(Drop{Pod: pod, Holder: holder, Reason: r, Detail: detail})
}
