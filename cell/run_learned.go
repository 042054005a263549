package cell

import (
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/podset"
)

// learnedPods gives the pods that have no index holder of their own (no
// event yet, or none ever: events "none") an index slot, so that what the
// cell learns from its routing has somewhere to live: speculative entries
// for every pod, approximate blocks for pods without events.
//
// Such a slot is registered under the pod's id, which is also the holder id
// of a pod's events when they carry no data-parallel rank: a pod that
// starts publishing keeps its slot, and the index switches it to exact at
// its first event. A pod whose events come from data-parallel ranks gets
// one slot per rank instead, and its fallback slot is killed. So is the
// fallback slot of a pod the registry declares dead (its learned blocks go
// with it); the pod gets a fresh one when it comes back.
type learnedPods struct {
	ix   *index.Index
	l    *index.Learner
	view *podset.Set // the pods the cell holds, static and discovered
	cfg  Config

	mu  sync.Mutex
	own map[string]index.Slot // fallback slots by pod id
}

func newLearnedPods(cfg Config, ix *index.Index, l *index.Learner, view *podset.Set) *learnedPods {
	return &learnedPods{ix: ix, l: l, cfg: cfg, view: view, own: map[string]index.Slot{}}
}

// lookup returns the pod's entry if the cell holds it (configured or
// discovered).
func (lp *learnedPods) lookup(pod string) (PodConfig, bool) {
	p, ok := lp.view.Load().Get(pod)
	return configOf(p), ok
}

// approximate reports whether pod is held without events.
func (lp *learnedPods) approximate(pod string) bool {
	p, ok := lp.lookup(pod)
	return ok && lp.cfg.podEvents(p) == PodEventsNone
}

// drop kills the fallback slot of a pod the cell no longer holds in that
// generation (deleted, or replaced by a pod of the same name at another
// address): what was learned about it goes with it.
func (lp *learnedPods) drop(pod string) {
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if s, ok := lp.own[pod]; ok {
		if cur, live := lp.ix.SlotOf(pod); live && cur == s {
			lp.ix.Kill(s)
		}
		delete(lp.own, pod)
	}
}

// slot returns the slot of a pod the registry lists without holders,
// registering a fallback slot for it when it has none. Dead pods, and pods
// with events whose ranks each get a slot, get none.
func (lp *learnedPods) slot(p events.PodInfo) (index.Slot, bool) {
	cfg, configured := lp.lookup(p.ID)
	if p.State == events.StateDead || !configured {
		return 0, false
	}
	approx := lp.approximate(p.ID)
	if !approx && cfg.DataParallelSize > 1 {
		return 0, false
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if s, ok := lp.own[p.ID]; ok {
		if cur, live := lp.ix.SlotOf(p.ID); live && cur == s {
			return s, true
		}
		delete(lp.own, p.ID) // killed meanwhile
	}
	s, err := lp.ix.Register(p.ID)
	if err != nil {
		return 0, false
	}
	lp.l.SetApproximate(s, approx, lp.cfg.learnedBound(cfg))
	lp.own[p.ID] = s
	return s, true
}

// sync kills the fallback slots that no longer stand for their pod: the
// pod died, or its events come from ranks with slots of their own. A pod
// whose events use the fallback slot itself keeps it (it is the events'
// now). Called on every registry tick.
func (lp *learnedPods) sync(snapshot []events.PodInfo) {
	byID := make(map[string]*events.PodInfo, len(snapshot))
	for i := range snapshot {
		byID[snapshot[i].ID] = &snapshot[i]
	}
	lp.mu.Lock()
	defer lp.mu.Unlock()
	for id, s := range lp.own {
		cur, live := lp.ix.SlotOf(id)
		if !live || cur != s {
			delete(lp.own, id) // the events' holder died with the pod
			continue
		}
		p := byID[id]
		switch {
		case p == nil || p.State == events.StateDead:
			lp.ix.Kill(s)
			delete(lp.own, id)
		case len(p.Holders) > 0:
			mine := false
			for _, h := range p.Holders {
				mine = mine || h.Slot == s
			}
			if !mine {
				lp.ix.Kill(s)
			}
			delete(lp.own, id)
		}
	}
}

// expireLoop removes expired learned blocks every interval until ctx ends.
func expireLoop(done <-chan struct{}, interval time.Duration, l *index.Learner) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-t.C:
			l.Expire(now)
		}
	}
}
