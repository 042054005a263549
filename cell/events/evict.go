package events

import (
	"sort"
	"sync"

	"github.com/cellrouter/cellrouter/cell/index"
)

// This file bounds what one holder may hold, so that one event stream (a
// flooding or broken publisher, or anyone who can reach a bind socket)
// cannot fill the index for every pod of the cell:
//
//   - a holder indexes at most its bound of router blocks (PodSpec
//     MaxIndexBlocks, else Config.MaxIndexBlocksPerPod) and tracks at most
//     Config.MaxBlocksPerPod engine blocks. A new block past either bound
//     evicts the holder's own least recently used leaf (leaves.go) instead
//     of being refused; only a block whose parent is that very leaf (one
//     chain as long as the bound) is refused, as ReasonHolderFull;
//   - when the index is nearly full (less than 1/pressureDiv of
//     index.Config.MaxBlocks free), a holder's limit is also its fair share
//     of the index (MaxBlocks divided by the number of holders), so a
//     flooding holder evicts its own blocks before the index fills;
//   - when the index is full nonetheless (it refused a store), the holders
//     over their fair share evict down to it, and the refused batch is
//     applied again: a holder within its share never pays for another's
//     flood.

// EvictReason says why a block was evicted.
type EvictReason uint8

// The eviction reasons.
const (
	// EvictPodBound: the holder reached its bound of indexed router blocks.
	EvictPodBound EvictReason = iota
	// EvictTracked: the holder reached Config.MaxBlocksPerPod engine blocks.
	EvictTracked
	// EvictFairShare: the index was full and the holder held more than its
	// fair share of it.
	EvictFairShare

	numEvictReasons
)

var evictNames = [numEvictReasons]string{
	EvictPodBound:  "pod_bound",
	EvictTracked:   "tracked_bound",
	EvictFairShare: "fair_share",
}

// String returns the reason's metric label.
func (r EvictReason) String() string {
	if r < numEvictReasons {
		return evictNames[r]
	}
	return "unknown"
}

// EvictReasons returns every eviction reason, in label order, for exporters.
func EvictReasons() []EvictReason {
	out := make([]EvictReason, numEvictReasons)
	for i := range out {
		out[i] = EvictReason(i)
	}
	return out
}

// Evictions counts evicted engine blocks by reason.
type Evictions [numEvictReasons]uint64

// evictionLog is the Applier's per-pod eviction counts. A pod's entry goes
// when the pod is killed, so the map holds at most the live pods.
type evictionLog struct {
	mu    sync.Mutex
	byPod map[string]*Evictions
}

// add adds a holder's pending counts to its pod's.
func (l *evictionLog) add(pod string, n *Evictions) {
	l.mu.Lock()
	e := l.byPod[pod]
	if e == nil {
		if l.byPod == nil {
			l.byPod = make(map[string]*Evictions)
		}
		e = new(Evictions)
		l.byPod[pod] = e
	}
	for r, k := range n {
		e[r] += k
	}
	l.mu.Unlock()
}

func (l *evictionLog) forget(pod string) {
	l.mu.Lock()
	delete(l.byPod, pod)
	l.mu.Unlock()
}

// EvictionsByPod returns the engine blocks evicted per pod and reason since
// start, for the live pods, sorted by pod.
func (a *Applier) EvictionsByPod() []PodEvictions {
	a.evicted.mu.Lock()
	out := make([]PodEvictions, 0, len(a.evicted.byPod))
	for pod, e := range a.evicted.byPod {
		out = append(out, PodEvictions{Pod: pod, Evicted: *e})
	}
	a.evicted.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// PodEvictions is one pod's eviction counts.
type PodEvictions struct {
	Pod     string
	Evicted Evictions
}

// evictOldest evicts h's least recently used leaf unless it is keep,
// appending the index removals to h.ops, and reports whether it did.
func (h *holder) evictOldest(keep int32, r EvictReason) bool {
	n := h.chains.victim(keep)
	if n == none {
		return false
	}
	var removed int
	h.ops, removed = h.chains.removeSubtree(n, h.ops, h.slot)
	h.evicted[r] += uint64(removed)
	h.nEvicted += removed
	return true
}

// makeRoom evicts h's oldest leaves until one more engine block completing
// routerBlocks router blocks fits both bounds, never evicting keep (the
// parent the block is about to join). It reports false when it cannot.
func (a *Applier) makeRoom(h *holder, keep int32, routerBlocks int) bool {
	for h.chains.len() >= a.cfg.MaxBlocksPerPod {
		if !h.evictOldest(keep, EvictTracked) {
			return false
		}
	}
	for routerBlocks > 0 && h.chains.indexed+routerBlocks > h.limit {
		if !h.evictOldest(keep, h.limitReason) {
			return false
		}
	}
	return true
}

// shrink evicts h's oldest leaves until it indexes at most target router
// blocks and tracks at most tracked engine blocks.
func (h *holder) shrink(target, tracked int, r EvictReason) {
	for h.chains.indexed > target || h.chains.len() > tracked {
		if !h.evictOldest(none, r) {
			return
		}
	}
}

// flushEvictions moves h's pending eviction counts to the Applier's; the
// caller holds h.mu.
func (a *Applier) flushEvictions(h *holder) {
	if h.nEvicted == 0 {
		return
	}
	for r, n := range h.evicted {
		a.counters.Evicted[r].Add(n)
	}
	a.evicted.add(h.pod, &h.evicted)
	h.evicted = Evictions{}
	h.nEvicted = 0
}

// applyRemovals writes removals to the index and counts them.
func (a *Applier) applyRemovals(ops []index.Op) {
	if len(ops) == 0 {
		return
	}
	a.ix.Apply(ops)
	a.counters.BlocksRemoved.Add(uint64(len(ops)))
}

// EnforceBounds evicts, in every holder, what exceeds its bounds: after a
// restore (package snapshot calls it), so that a snapshot taken with wider
// bounds, or before they existed, cannot bring back more than the bounds
// allow. The restored index must be complete when it is called.
func (a *Applier) EnforceBounds() {
	a.forEachLiveHolder(func(h *holder) {
		h.ops = h.ops[:0]
		h.shrink(h.bound, a.cfg.MaxBlocksPerPod, EvictPodBound)
		a.applyRemovals(h.ops)
		h.ops = h.ops[:0]
		a.flushEvictions(h)
	})
}

// IndexedBlocks returns the number of router blocks holder indexes: its
// share of the index, which its bound caps.
func (a *Applier) IndexedBlocks(holderID string) int {
	a.mu.RLock()
	h := a.holders[holderID]
	a.mu.RUnlock()
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chains.indexed
}

// boundOf returns the bound of indexed router blocks of pod's holders.
func (a *Applier) boundOf(pod string) int {
	if b, ok := a.bounds[pod]; ok {
		return b
	}
	return a.cfg.MaxIndexBlocksPerPod
}

// podBounds maps the configured pods that set MaxIndexBlocks to it.
func podBounds(pods []PodSpec) map[string]int {
	m := make(map[string]int)
	for _, p := range pods {
		if p.MaxIndexBlocks > 0 {
			m[p.ID] = p.MaxIndexBlocks
		}
	}
	return m
}

// Touch records that a request routed to holder matched its blocks up to
// the one with router hash deepest (the last exact block of its match):
// they count as used now, the last eviction candidates (see leaves.go: the
// mark is taken when the block comes up for eviction). It never waits:
// when the holder is busy applying a batch it does nothing and reports
// false. It may be called concurrently.
func (a *Applier) Touch(holderID string, deepest index.BlockHash) bool {
	a.mu.RLock()
	h := a.holders[holderID]
	a.mu.RUnlock()
	if h == nil || !h.mu.TryLock() {
		return false
	}
	defer h.mu.Unlock()
	if h.dead {
		return false
	}
	h.chains.noteMatched(deepest)
	return true
}
