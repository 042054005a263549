package flowcontrol

import (
	"context"
	"testing"
	"time"
)

// startClocked is start on a fake clock: the queue's waits are the
// test's to move, while its recheck runs as in a cell.
func startClocked(t *testing.T, cfg Config, sat Saturation) (*Controller, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	c := New(cfg, sat, nil)
	c.now = clk.now
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return c, clk
}

// waitConfig is the affinity wait with a block worth a millisecond.
func waitConfig() Config {
	cfg := testConfig()
	cfg.AffinityWait = true
	cfg.PrefillPerBlock = time.Millisecond
	return cfg
}

// stillWaiting fails the test when ch has an answer within a while (the
// recheck runs every millisecond meanwhile).
func stillWaiting(t *testing.T, ch <-chan admitResult, why string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: the request went (err %v)", why, r.err)
	case <-time.After(40 * time.Millisecond):
	}
}

func TestAffinityWaitHoldsForThePick(t *testing.T) {
	pods := newFakePods(1)
	c, _ := startClocked(t, waitConfig(), pods)
	pods.add("a", 1) // the pick, which holds 100 blocks b lacks, is full
	ch := admitAsync(context.Background(), c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 100}})
	eventually(t, "the request to wait", func() bool { return queued(c) == 1 })
	stillWaiting(t, ch, "b has room but costs 100 ms of prefill and no time passed")
	pods.add("a", -1)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.g.Queued() || r.g.Place([]string{"a", "b"}, nil) != -1 {
		t.Fatal("the request freed by its pick is not placed on it")
	}
}

func TestAffinityWaitEndsAfterTheDetourPrefill(t *testing.T) {
	pods := newFakePods(1)
	c, clk := startClocked(t, waitConfig(), pods)
	pods.add("a", 1)
	pods.add("c", 1)
	// a: the pick; c: holds all but 10 of its blocks (full); b: holds
	// none of the 100 (room).
	ch := admitAsync(context.Background(), c, Request{Tokens: 10, Pods: []string{"a", "c", "b"}, Detours: []float64{0, 10, 100}})
	eventually(t, "the request to wait", func() bool { return queued(c) == 1 })
	clk.advance(99 * time.Millisecond)
	stillWaiting(t, ch, "99 ms waited, b's detour is worth 100")
	clk.advance(time.Millisecond)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if i := r.g.Place([]string{"a", "c", "b"}, nil); i != 2 {
		t.Fatalf("Place = %d, want 2 (b, the only pod with room)", i)
	}
}

func TestAffinityWaitOpensPartialHoldersFirst(t *testing.T) {
	pods := newFakePods(1)
	c, clk := startClocked(t, waitConfig(), pods)
	pods.add("a", 1)
	// c lacks 10 of the blocks and has room, b lacks 100 and has room:
	// c opens after 10 ms and takes the request before b would.
	ch := admitAsync(context.Background(), c, Request{Tokens: 10, Pods: []string{"a", "b", "c"}, Detours: []float64{0, 100, 10}})
	eventually(t, "the request to wait", func() bool { return queued(c) == 1 })
	clk.advance(10 * time.Millisecond)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The re-pick's placement applies the same rule: b is not open yet.
	if i := r.g.Place([]string{"a", "b", "c"}, []float64{0, 100, 10}); i != 2 {
		t.Fatalf("Place = %d after 10 ms, want 2 (c)", i)
	}
	if i := r.g.Place([]string{"a", "b", "c"}, nil); i != 1 {
		t.Fatalf("Place without detours = %d, want 1 (b, the first with room)", i)
	}
}

func TestAffinityWaitOffOrNothingHeldGoesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*Config)
		req  Request
	}{
		{"wait off", func(c *Config) { c.AffinityWait = false }, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 100}}},
		{"no prefill cost", func(c *Config) { c.PrefillPerBlock = 0 }, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 100}}},
		{"nothing held", func(*Config) {}, Request{Tokens: 10, Pods: []string{"a", "b"}}},
		{"b holds it all", func(*Config) {}, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := waitConfig()
			tc.cfg(&cfg)
			pods := newFakePods(1)
			c, _ := startClocked(t, cfg, pods)
			pods.add("a", 1)
			g, err := c.Admit(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if g.Queued() || g.Place(tc.req.Pods, nil) != 1 {
				t.Fatalf("queued %v, placed %d: want admitted at once to b", g.Queued(), g.Place(tc.req.Pods, nil))
			}
		})
	}
}

func TestAffinityWaitFreedPodTakesAnOpenRequest(t *testing.T) {
	// Work conservation: b frees while the first request still waits for
	// its own pick; a later request that b costs nothing goes there.
	pods := newFakePods(1)
	c, _ := startClocked(t, waitConfig(), pods)
	pods.add("a", 1)
	pods.add("b", 1)
	ctx := context.Background()
	forA := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 100}})
	eventually(t, "the first request to wait", func() bool { return queued(c) == 1 })
	cold := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}})
	eventually(t, "the second request to wait", func() bool { return queued(c) == 2 })
	pods.add("b", -1)
	r, which := dispatched(t, forA, cold)
	if which != 1 || r.err != nil {
		t.Fatalf("b freed: dispatched request %d (err %v), want the one whose prefix nobody holds", which, r.err)
	}
	pods.add("b", 1)
	r.g.Started()
	stillWaiting(t, forA, "a is still full")
	pods.add("a", -1)
	if r := <-forA; r.err != nil || r.g.Place([]string{"a", "b"}, nil) != -1 {
		t.Fatalf("a freed: err %v, want the request placed on a", r.err)
	}
}

func TestAffinityWaitCountsFromTheFirstRoom(t *testing.T) {
	// A request that queued a long while with no room anywhere has not
	// waited for its pick yet: when b frees, its wait for a begins.
	pods := newFakePods(1)
	c, clk := startClocked(t, waitConfig(), pods)
	pods.add("a", 1)
	pods.add("b", 1)
	ch := admitAsync(context.Background(), c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 100}})
	eventually(t, "the request to wait", func() bool { return queued(c) == 1 })
	clk.advance(5 * time.Second)
	pods.add("b", -1)
	stillWaiting(t, ch, "b just freed; the 5 s queued behind a full fleet do not count")
	clk.advance(100 * time.Millisecond)
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	if i := r.g.Place([]string{"a", "b"}, []float64{0, 100}); i != 1 {
		t.Fatalf("Place = %d, want 1 (b, open after 100 ms of room)", i)
	}
}
