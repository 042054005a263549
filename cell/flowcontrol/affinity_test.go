package flowcontrol

import (
	"context"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// queued returns the requests waiting, all bands together.
func queued(c *Controller) int {
	n := 0
	for _, q := range c.Stats().Queued {
		n += q
	}
	return n
}

// queueBoth fills pods a and b and queues, in this order, a request whose
// pick is a (b would cost it 40 blocks of prefix) and one whose pick is b
// (a would cost it 40), then returns their answers once both wait.
func queueBoth(t *testing.T, c *Controller, pods *fakePods) (toA, toB <-chan admitResult) {
	t.Helper()
	pods.add("a", 1)
	pods.add("b", 1)
	ctx := context.Background()
	toA = admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 40}})
	eventually(t, "the first request to wait", func() bool { return queued(c) == 1 })
	toB = admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"b", "a"}, Detours: []float64{0, 40}})
	eventually(t, "the second request to wait", func() bool { return queued(c) == 2 })
	return toA, toB
}

// dispatched returns the answer that arrives first of two, and which.
func dispatched(t *testing.T, first, second <-chan admitResult) (admitResult, int) {
	t.Helper()
	select {
	case r := <-first:
		return r, 0
	case r := <-second:
		return r, 1
	case <-time.After(20 * time.Second):
		t.Fatal("nothing was dispatched")
	}
	return admitResult{}, -1
}

func TestAffinityGivesAFreedPodToItsHolder(t *testing.T) {
	pods := newFakePods(1)
	c := start(t, testConfig(), pods)
	toA, toB := queueBoth(t, c, pods)

	// b frees up: the later request, whose prefix b holds, goes first;
	// the earlier one is passed over once and waits for a.
	pods.add("b", -1)
	r, which := dispatched(t, toA, toB)
	if which != 1 || r.err != nil {
		t.Fatalf("b freed: dispatched request %d (err %v), want the one whose pick is b", which, r.err)
	}
	if st := c.Stats(); st.AffinityReordered != 1 {
		t.Fatalf("AffinityReordered = %d, want 1", st.AffinityReordered)
	}
	if r.g.Place([]string{"b", "a"}, nil) != -1 {
		t.Fatal("the request dispatched for b is placed elsewhere")
	}
	pods.add("b", 1) // it runs there
	r.g.Started()
	select {
	case r := <-toA:
		t.Fatalf("the request for a went while a was full (err %v)", r.err)
	case <-time.After(30 * time.Millisecond):
	}
	pods.add("a", -1)
	if r := <-toA; r.err != nil || r.g.Place([]string{"a", "b"}, nil) != -1 {
		t.Fatalf("a freed: err %v, want the request dispatched to a", r.err)
	}
}

func TestAffinityLookaheadOneIsFIFO(t *testing.T) {
	cfg := testConfig()
	cfg.AffinityLookahead = 1
	pods := newFakePods(1)
	c := start(t, cfg, pods)
	toA, toB := queueBoth(t, c, pods)
	pods.add("b", -1)
	r, which := dispatched(t, toA, toB)
	if which != 0 || r.err != nil {
		t.Fatalf("dispatched request %d (err %v), want the first (FIFO)", which, r.err)
	}
	// It goes to the pod with room, away from its prefix.
	if i := r.g.Place([]string{"a", "b"}, nil); i != 1 {
		t.Fatalf("Place = %d, want 1 (b, the pod with room)", i)
	}
	r.g.Done(0)
	pods.add("a", -1)
	if r := <-toB; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestAffinityPassesAreBounded(t *testing.T) {
	cfg := testConfig()
	cfg.AffinityMaxPasses = 1
	pods := newFakePods(1)
	c := start(t, cfg, pods)
	toA, toB := queueBoth(t, c, pods)
	ctx := context.Background()
	// b frees: the request for b goes, passing the one for a once.
	pods.add("b", -1)
	first, which := dispatched(t, toA, toB)
	if which != 1 || first.err != nil {
		t.Fatalf("dispatched request %d (err %v), want the one for b", which, first.err)
	}
	pods.add("b", 1) // it runs there
	first.g.Started()
	// Another request for b arrives behind the one for a, and b frees
	// again: the request for a was passed over its bound, so it goes
	// first, to b.
	toB2 := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"b", "a"}, Detours: []float64{0, 40}})
	eventually(t, "the third request to wait", func() bool { return queued(c) == 2 })
	pods.add("b", -1)
	first.g.Done(0)
	r, which := dispatched(t, toA, toB2)
	if which != 0 || r.err != nil {
		t.Fatalf("dispatched request %d (err %v), want the one passed over", which, r.err)
	}
	r.g.Done(0)
	if r := <-toB2; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestAffinityKeepsTenantShares(t *testing.T) {
	// Affinity reorders within a tenant only: the tenant with the least
	// counter is served first even when another tenant's request holds
	// its prefix on the freed pod.
	pods := newFakePods(1)
	c := start(t, testConfig(), pods)
	pods.add("a", 1)
	pods.add("b", 1)
	ctx := context.Background()
	heavy := admitAsync(ctx, c, Request{Tenant: "heavy", Tokens: 10, Pods: []string{"b", "a"}, Detours: []float64{0, 40}})
	eventually(t, "heavy to wait", func() bool { return queued(c) == 1 })
	light := admitAsync(ctx, c, Request{Tenant: "light", Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 40}})
	eventually(t, "light to wait", func() bool { return queued(c) == 2 })
	c.mu.Lock()
	var band auth.Priority // the requests' band
	c.q.Charge("heavy", band, 1, 1000)
	c.mu.Unlock()
	pods.add("b", -1)
	r, which := dispatched(t, light, heavy)
	if which != 0 || r.err != nil {
		t.Fatalf("dispatched request %d (err %v), want the light tenant's", which, r.err)
	}
	r.g.Done(0)
	pods.add("a", -1)
	if r := <-heavy; r.err != nil {
		t.Fatal(r.err)
	}
}

func TestAffinityPrefersTheHolderOverAnAnywhereRequest(t *testing.T) {
	// A freed pod that costs two waiting requests nothing goes to the
	// one whose prefix it holds, not to the earlier one that any pod
	// serves as well.
	pods := newFakePods(1)
	c := start(t, testConfig(), pods)
	pods.add("a", 1)
	pods.add("b", 1)
	ctx := context.Background()
	anywhere := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}})
	eventually(t, "the first request to wait", func() bool { return queued(c) == 1 })
	holder := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 50}})
	eventually(t, "the second request to wait", func() bool { return queued(c) == 2 })
	pods.add("a", -1)
	r, which := dispatched(t, anywhere, holder)
	if which != 1 || r.err != nil {
		t.Fatalf("a freed: dispatched request %d (err %v), want the one whose prefix a holds", which, r.err)
	}
	pods.add("a", 1)
	r.g.Started()
	pods.add("b", -1)
	if r := <-anywhere; r.err != nil || r.g.Place([]string{"a", "b"}, nil) != 1 {
		t.Fatalf("b freed: err %v, want the other request placed on b", r.err)
	}
}

func TestAffinityScore(t *testing.T) {
	// The detour decides; the prefix held only breaks ties, and never
	// outweighs a block of detour even at the largest caches.
	if !(affinityScore(0, 600, true) < affinityScore(0, 0, true)) {
		t.Error("a holder does not go before a request served as well anywhere")
	}
	if affinityScore(0, 600, true) >= 0 || affinityScore(0, 0, true) <= 0 || affinityScore(0, 0, false) != 0 {
		t.Error("the look does not end at a holder, or ends at a request served anywhere while holders wait")
	}
	if !(affinityScore(0, 0, true) < affinityScore(1, 1_000_000, true)) {
		t.Error("the prefix held outweighs a block of detour")
	}
	if !(affinityScore(3, 10, true) < affinityScore(4, 10, true)) {
		t.Error("a smaller detour does not go first")
	}
}
