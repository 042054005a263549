package index

import (
	"errors"
	"sync"
)

// ErrNoFreeSlot is returned by Register when every slot is live or still
// being swept.
var ErrNoFreeSlot = errors.New("index: no free pod slot")

// ErrEmptyPodID is returned by Register for an empty pod id.
var ErrEmptyPodID = errors.New("index: empty pod id")

type slotState uint8

const (
	slotFree slotState = iota
	slotLive
	slotSweeping
)

// registry maps pod ids to slots. A slot goes free -> live (Register) ->
// sweeping (Kill) -> free (after its sweep finished), so a slot is never
// reused while bits of its previous pod may remain in a shard.
type registry struct {
	mu    sync.Mutex
	byID  map[string]Slot
	ids   [MaxPods]string
	state [MaxPods]slotState
}

func (r *registry) init() { r.byID = make(map[string]Slot) }

// Register returns the slot of a live pod id, or gives the id the lowest free
// slot and marks it alive.
func (ix *Index) Register(podID string) (Slot, error) {
	if podID == "" {
		return 0, ErrEmptyPodID
	}
	r := &ix.pods
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.byID[podID]; ok {
		return s, nil
	}
	for i := 0; i < MaxPods; i++ {
		if r.state[i] == slotFree {
			s := Slot(i)
			r.state[i] = slotLive
			r.ids[i] = podID
			r.byID[podID] = s
			// A reused slot starts empty: its sweep cleared every bit, and
			// no write for it applied since its Kill.
			ix.held[s].Store(0)
			ix.setAlive(s)
			return s, nil
		}
	}
	return 0, ErrNoFreeSlot
}

// SlotOf returns the slot of a live pod id.
func (ix *Index) SlotOf(podID string) (Slot, bool) {
	ix.pods.mu.Lock()
	s, ok := ix.pods.byID[podID]
	ix.pods.mu.Unlock()
	return s, ok
}

// PodID returns the id of the pod in a live slot ("" when not live).
func (ix *Index) PodID(s Slot) string {
	ix.pods.mu.Lock()
	defer ix.pods.mu.Unlock()
	if ix.pods.state[s] != slotLive {
		return ""
	}
	return ix.pods.ids[s]
}

// Kill removes a pod in two phases. Phase 1, before Kill returns: its alive
// bit is cleared, so no query counts it and no later write for the slot
// applies. Phase 2, in the background: the sweeper clears its bits from every
// shard, deletes blocks nobody holds any more, frees its tier map and then its
// slot. Killing a slot that is not live does nothing.
func (ix *Index) Kill(s Slot) {
	r := &ix.pods
	r.mu.Lock()
	if r.state[s] != slotLive {
		r.mu.Unlock()
		return
	}
	r.state[s] = slotSweeping
	delete(r.byID, r.ids[s])
	r.ids[s] = ""
	ix.clearAlive(s)
	r.mu.Unlock()
	if l := ix.learn.Load(); l != nil {
		st := &l.slots[s]
		st.mu.Lock()
		l.forget(s, false)
		st.mu.Unlock()
	}
	ix.sweep.enqueue(s)
}

// ClearPod removes every block of a live pod and keeps it alive, as an
// engine's AllBlocksCleared asks. It returns when the pod holds nothing. The
// caller must not write for the same pod concurrently.
//
// Learned blocks go too; a slot in approximate mode stays in it.
func (ix *Index) ClearPod(s Slot) {
	if l := ix.learn.Load(); l != nil {
		st := &l.slots[s]
		st.mu.Lock()
		defer st.mu.Unlock()
		l.forget(s, true)
	}
	ix.tiers[s].reset()
	ix.sweepShards(BitmapOf(s))
	ix.held[s].Store(0)
}

func (r *registry) counts() (live, sweeping int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.state {
		switch st {
		case slotLive:
			live++
		case slotSweeping:
			sweeping++
		}
	}
	return live, sweeping
}

// freeSlots returns swept slots to the free list.
func (r *registry) freeSlots(b HostBitmap) {
	r.mu.Lock()
	b.ForEach(func(s Slot) { r.state[s] = slotFree })
	r.mu.Unlock()
}
