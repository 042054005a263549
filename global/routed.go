package global

import "time"

// DefaultRoutedLoadTTL is how long the load a router adds by its own
// hand-offs outlives the gossiped load it was added to (Config.RoutedLoadTTL).
const DefaultRoutedLoadTTL = 5 * time.Second

// routedLoads remembers, per cell, the load the global tier has added by
// its own routing since the cell last gossiped (CellLoad.Routed), so that
// the searches between two gossip messages do not all count on the same
// idle pod. An entry holds the gossiped load it was derived from and when
// the first of its hand-offs was noted. It is dropped once the directory
// shows any other load (the cell gossiped again), and at the latest ttl
// after that first hand-off: a cell gossips its load every summary
// interval whether it changed or not, so by then its gossiped load
// includes every hand-off still running, and one that ended before the
// cell gossiped leaves the same load as before, which a comparison of
// values alone cannot tell from "not gossiped yet" (an idle cell kept a
// burst's added load for as long as it stayed idle). It belongs to a
// Router and is guarded by its mutex.
type routedLoads struct {
	m   map[string]routedLoad
	ttl time.Duration
	now func() time.Time // nil: time.Now
}

type routedLoad struct {
	gossiped, now CellLoad
	born          time.Time // when the first hand-off on gossiped was noted
}

func newRoutedLoads(ttl time.Duration) routedLoads {
	return routedLoads{m: map[string]routedLoad{}, ttl: ttl}
}

func (m *routedLoads) clock() time.Time {
	if m.now != nil {
		return m.now()
	}
	return time.Now()
}

// empty reports whether no cell has added load.
func (m *routedLoads) empty() bool { return len(m.m) == 0 }

// live reports whether e still stands for a view whose gossiped load is l.
func (m *routedLoads) live(e routedLoad, l CellLoad, now time.Time) bool {
	return e.gossiped == l && now.Sub(e.born) < m.ttl
}

// apply replaces the load of every view (a copy the caller owns) with its
// current entry, and drops the stale and expired entries.
func (m *routedLoads) apply(views []CellView) {
	if len(m.m) == 0 {
		return
	}
	now := m.clock()
	kept := 0
	for i := range views {
		v := &views[i]
		if e, ok := m.m[v.ID]; ok {
			if m.live(e, v.Load, now) {
				v.Load = e.now
				kept++
			} else {
				delete(m.m, v.ID)
			}
		}
	}
	if len(m.m) > kept {
		// Cells that left the directory take their entries with them.
		for id, e := range m.m {
			if now.Sub(e.born) >= m.ttl {
				delete(m.m, id)
			}
		}
	}
}

// note records that a request of blocks blocks went to the view's cell,
// whose probe answered a pick of pickLoad active blocks (-1: not probed).
// v.Load is the load the decision saw (gossiped, or already adjusted).
func (m *routedLoads) note(v *CellView, gossiped CellLoad, blocks, pickLoad int) {
	now := m.clock()
	born, l := now, gossiped
	if e, ok := m.m[v.ID]; ok && m.live(e, gossiped, now) {
		// Continue from what the decision saw.
		born, l = e.born, v.Load
	}
	// Otherwise the decision's entry, if any, expired since: start again
	// from the gossiped load.
	l.Routed(blocks, pickLoad)
	m.m[v.ID] = routedLoad{gossiped: gossiped, now: l, born: born}
}
