package global

import (
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
