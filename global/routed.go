package global

// routedLoads remembers, per cell, the load the global tier has added by
// its own routing since the cell last gossiped (CellLoad.Routed), so that
// the searches between two gossip messages do not all count on the same
// idle pod. An entry holds the gossiped load it was derived from; once the
// directory shows any other load (the cell gossiped again), the entry is
// stale and dropped. It belongs to a Router and is guarded by its mutex.
type routedLoads map[string]routedLoad

type routedLoad struct {
	gossiped, now CellLoad
}

// apply replaces the load of every view (a copy the caller owns) with its
// current entry, and drops the stale entries.
func (m routedLoads) apply(views []CellView) {
	for i := range views {
		v := &views[i]
		if e, ok := m[v.ID]; ok {
			if e.gossiped == v.Load {
				v.Load = e.now
			} else {
				delete(m, v.ID)
			}
		}
	}
}

// note records that a request of blocks blocks went to the view's cell,
// whose probe answered a pick of pickLoad active blocks (-1: not probed).
// v.Load is the load the decision saw (gossiped, or already adjusted).
func (m routedLoads) note(v *CellView, gossiped CellLoad, blocks, pickLoad int) {
	l := v.Load
	l.Routed(blocks, pickLoad)
	m[v.ID] = routedLoad{gossiped: gossiped, now: l}
}
