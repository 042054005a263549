package events

import (
	"runtime"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
)

// This file is the index-wide half of the bounds (evict.go has the
// per-holder half): the fair share of each holder when the index itself
// runs out of room, so that the holders within their share never pay for
// one that floods.

// capacity is the optional part of an IndexWriter that says how many
// distinct blocks it holds and may hold at most (*index.Index implements
// it).
type capacity interface {
	MaxBlocks() int
	Blocks() int64
}

// pressureDiv sets when the index is under pressure: when less than
// 1/pressureDiv of its capacity is free. Under pressure a holder's limit is
// also its fair share, so that a flooding holder stops short of the
// capacity and the others' stores are not refused while it is busy (when a
// holder cannot be taken for relieve).
const pressureDiv = 8

// limitOf returns the most router blocks h may index now, and the reason
// to count its evictions under: its bound, or under pressure its fair share
// of the index when that is less. The caller holds h.mu.
func (a *Applier) limitOf(h *holder) (int, EvictReason) {
	capa, ok := a.ix.(capacity)
	if !ok {
		return h.bound, EvictPodBound
	}
	most := capa.MaxBlocks()
	if capa.Blocks() < int64(most-most/pressureDiv) {
		return h.bound, EvictPodBound
	}
	if share := most / a.sharers(); share < h.bound {
		return share, EvictFairShare
	}
	return h.bound, EvictPodBound
}

// relieveWait bounds how long relieve waits for a busy holder's lock.
const relieveWait = 2 * time.Millisecond

// tryLockFor takes mu if it can within d, without ever blocking on it (two
// holders relieving each other must not deadlock), and reports whether it
// did.
func tryLockFor(mu *sync.Mutex, d time.Duration) bool {
	if mu.TryLock() {
		return true
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		runtime.Gosched()
		if mu.TryLock() {
			return true
		}
	}
	return false
}

// sharers returns the number of holders the index is shared among: the
// live holders, and at least the configured pods.
func (a *Applier) sharers() int {
	a.mu.RLock()
	n := len(a.holders)
	a.mu.RUnlock()
	return max(n, len(a.cfg.Pods), 1)
}

// relieve runs when the index refused stores of h (locked, its batch's ops
// in h.ops) for room: every holder over its fair share of the index evicts
// down to it, h included, and h's ops are applied again (they are
// idempotent). A busy holder is waited for at most relieveWait: one still
// applying a batch then keeps its blocks until its next batch, which the
// pressure limit (limitOf) caps at its share, and h's refused stores stay
// refused (counted in the index's cap drops).
func (a *Applier) relieve(h *holder) index.ApplyResult {
	capa, ok := a.ix.(capacity)
	if !ok {
		return index.ApplyResult{}
	}
	a.mu.RLock()
	others := make([]*holder, 0, len(a.holders))
	for _, v := range a.holders {
		if v != h {
			others = append(others, v)
		}
	}
	a.mu.RUnlock()
	share := capa.MaxBlocks() / max(len(others)+1, len(a.cfg.Pods))
	for _, v := range others {
		if !tryLockFor(&v.mu, relieveWait) {
			continue
		}
		if !v.dead && v.chains.indexed > share {
			v.ops = v.ops[:0]
			v.shrink(share, v.chains.len(), EvictFairShare)
			a.applyRemovals(v.ops)
			v.ops = v.ops[:0]
			a.flushEvictions(v)
		}
		v.mu.Unlock()
	}
	if h.chains.indexed > share {
		h.shrink(share, h.chains.len(), EvictFairShare)
	}
	return a.ix.Apply(h.ops)
}
