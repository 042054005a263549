package global

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestRoutedLoadExpiresWhileGossipStaysTheSame: an idle cell keeps
// gossiping the very load it had before a burst of hand-offs (the requests
// ended between two announcements); the load the router added vanishes
// RoutedLoadTTL after the first hand-off all the same, and later hand-offs
// of the same burst do not extend it. Failed on the value-only rule, which
// kept the added load for as long as the gossiped load stayed the same.
func TestRoutedLoadExpiresWhileGossipStaysTheSame(t *testing.T) {
	gossiped := CellLoad{ActiveRequests: 0, ActiveBlocks: 0, FreeBlocks: 4000, Pods: 4}
	clock := time.Unix(1_000_000, 0)
	m := newRoutedLoads(3 * time.Second)
	m.now = func() time.Time { return clock }
	views := func() []CellView { return []CellView{{ID: "a", Load: gossiped}, {ID: "b", Load: gossiped}} }

	v := views()
	m.apply(v)
	m.note(&v[0], gossiped, 100, -1)
	clock = clock.Add(2 * time.Second)
	v = views()
	m.apply(v)
	if v[0].Load.ActiveRequests != 1 || v[0].Load.ActiveBlocks != 100 {
		t.Fatalf("2s after a hand-off cell a shows %+v, want the hand-off added", v[0].Load)
	}
	m.note(&v[0], gossiped, 100, -1) // the burst goes on
	clock = clock.Add(900 * time.Millisecond)
	v = views()
	m.apply(v)
	if v[0].Load.ActiveRequests != 2 || v[0].Load.ActiveBlocks != 200 {
		t.Fatalf("2.9s after the first hand-off cell a shows %+v, want both hand-offs added", v[0].Load)
	}
	clock = clock.Add(100 * time.Millisecond) // 3s after the first hand-off
	v = views()
	m.apply(v)
	if v[0].Load != gossiped || v[1].Load != gossiped || !m.empty() {
		t.Fatalf("at the TTL the views show %+v and %+v with %d entries, want the gossiped %+v and none",
			v[0].Load, v[1].Load, len(m.m), gossiped)
	}

	// A hand-off decided on an entry that expired before it was noted
	// starts again from the gossiped load, not from the expired one.
	v = views()
	m.apply(v)
	m.note(&v[0], gossiped, 100, -1)
	seen := views()
	m.apply(seen) // the decision's view: one hand-off added
	clock = clock.Add(3 * time.Second)
	m.note(&seen[0], gossiped, 100, -1)
	v = views()
	m.apply(v)
	if v[0].Load.ActiveRequests != 1 || v[0].Load.ActiveBlocks != 100 {
		t.Fatalf("a hand-off noted on an expired entry shows %+v, want only itself added", v[0].Load)
	}

	// An entry of a cell that left the directory expires too.
	clock = clock.Add(3 * time.Second)
	m.apply([]CellView{{ID: "b", Load: gossiped}})
	if !m.empty() {
		t.Fatalf("%d entries left after their cell left and the TTL passed", len(m.m))
	}
}

// TestRoutedLoadTTLValidated: the TTL is a tunable that must be positive.
func TestRoutedLoadTTLValidated(t *testing.T) {
	c := DefaultConfig()
	c.RoutedLoadTTL = 0
	if err := c.Validate(); err == nil {
		t.Fatal("RoutedLoadTTL 0 accepted")
	}
}

// TestRoutedLoadsMatchNaiveModel: random hand-offs, gossip changes and
// clock steps over a few cells; the views always equal a naive model that
// keeps every hand-off since the cell's gossiped load last changed, with
// its time, and replays the ones of the current run (a run ends TTL after
// its first hand-off) onto the gossiped load.
func TestRoutedLoadsMatchNaiveModel(t *testing.T) {
	const ttl = 3 * time.Second
	type handoff struct {
		at           time.Time
		blocks, pick int
	}
	r := rand.New(rand.NewPCG(7, 8))
	for trial := range 200 {
		clock := time.Unix(1_000_000, 0)
		m := newRoutedLoads(ttl)
		m.now = func() time.Time { return clock }
		ids := []string{"a", "b", "c"}
		gossiped := map[string]CellLoad{}
		for _, id := range ids {
			gossiped[id] = CellLoad{ActiveBlocks: r.IntN(100), FreeBlocks: 5000, Pods: 1 + r.IntN(4)}
		}
		runs := map[string][]handoff{} // the model's current run per cell
		modelLoad := func(id string) CellLoad {
			run := runs[id]
			if len(run) == 0 || !clock.Before(run[0].at.Add(ttl)) {
				runs[id] = nil
				return gossiped[id]
			}
			l := gossiped[id]
			for _, h := range run {
				l.Routed(h.blocks, h.pick)
			}
			return l
		}
		views := func() []CellView {
			vs := make([]CellView, len(ids))
			for i, id := range ids {
				vs[i] = CellView{ID: id, Load: gossiped[id]}
			}
			m.apply(vs)
			return vs
		}
		for step := range 60 {
			switch k := r.IntN(10); {
			case k < 5: // a hand-off decided on the current views
				vs := views()
				i := r.IntN(len(ids))
				id := ids[i]
				modelLoad(id) // ends an expired run
				h := handoff{at: clock, blocks: 1 + r.IntN(200), pick: -1}
				m.note(&vs[i], gossiped[id], h.blocks, h.pick)
				runs[id] = append(runs[id], h)
			case k < 7: // the clock moves
				clock = clock.Add(time.Duration(r.IntN(1500)) * time.Millisecond)
			case k < 8: // a cell gossips another load
				id := ids[r.IntN(len(ids))]
				l := gossiped[id]
				l.ActiveBlocks++
				gossiped[id] = l
				runs[id] = nil
			default: // a cell gossips the same load again: nothing changes
			}
			for i, v := range views() {
				if want := modelLoad(ids[i]); v.Load != want {
					t.Fatalf("trial %d step %d: cell %s shows %+v, want %+v", trial, step, ids[i], v.Load, want)
				}
			}
		}
	}
}

// BenchmarkRoutedLoadsApply: the per-decision cost of laying the routed
// loads over 64 cells' views, half of them with a live entry.
func BenchmarkRoutedLoadsApply(b *testing.B) {
	m := newRoutedLoads(DefaultRoutedLoadTTL)
	base := make([]CellView, 64)
	for i := range base {
		base[i] = CellView{ID: fmt.Sprintf("cell-%02d", i), Load: CellLoad{ActiveBlocks: i, FreeBlocks: 5000, Pods: 4}}
	}
	for i := 0; i < len(base); i += 2 {
		v := base[i]
		m.note(&v, base[i].Load, 100, -1)
	}
	vs := make([]CellView, len(base))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		copy(vs, base)
		m.apply(vs)
	}
}
