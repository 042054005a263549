package flowcontrol

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// fakeClock is a controller's clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) advance(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

// headroomController is a controller over pods of 4 slots each with a
// quarter kept as headroom (3 for a request over its share) on a clock
// the test moves; Run is not started, so the queue moves only when a
// request ends or starts.
func headroomController(t *testing.T, slots int) (*Controller, *fakePods, *fakeClock) {
	t.Helper()
	cfg := testConfig()
	cfg.Headroom, cfg.ActiveWindow = 0.25, 10*time.Second
	pods := newFakePods(slots)
	clk := &fakeClock{t: time.Unix(1_000_000, 0)}
	c := New(cfg, pods, nil)
	c.now = clk.now
	return c, pods, clk
}

// take admits r at once (failing the test if it would wait: on the
// test's clock, which stands still, a request that joins the queue behind
// a waiting one and is dispatched straight away waits 0) and takes a slot
// on the pod its grant goes to.
func take(t *testing.T, c *Controller, pods *fakePods, r Request) (*Grant, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	g, err := c.Admit(ctx, r)
	if err != nil || g.Waited() != 0 {
		t.Fatalf("%s: got %v, want admission at once", r.Tenant, err)
	}
	pod := r.Pods[0]
	if i := g.Place(r.Pods, nil); i > 0 {
		pod = r.Pods[i]
	}
	pods.add(pod, 1)
	g.Started()
	return g, pod
}

func TestReservedLimit(t *testing.T) {
	for _, tc := range []struct {
		limit   int
		reserve float64
		want    int
	}{
		{8, 0, 8}, {8, 0.25, 6}, {4, 0.25, 3}, {2, 0.25, 1}, {2, 0.5, 1}, {1, 0.25, 1},
		{10, 0.05, 9}, {3, 0.9, 1}, {100, 0.25, 75},
	} {
		if got := ReservedLimit(tc.limit, tc.reserve); got != tc.want {
			t.Errorf("ReservedLimit(%d, %v) = %d, want %d", tc.limit, tc.reserve, got, tc.want)
		}
	}
}

// TestHeadroomKeepsASlotForTheQuietTenant: with a quiet tenant active, a
// noisy tenant over its share fills each pod only to its limit less the
// headroom, so the quiet tenant's next request is admitted at once; when
// the quiet tenant has been idle for the active window, the noisy one may
// fill every slot again.
func TestHeadroomKeepsASlotForTheQuietTenant(t *testing.T) {
	c, pods, clk := headroomController(t, 4)
	ab := []string{"a", "b"}
	quiet := func(ps []string) Request { return Request{Tenant: "quiet", Tokens: 100, Pods: ps} }
	noisy := func(ps []string) Request { return Request{Tenant: "noisy", Tokens: 100, Pods: ps} }

	g, _ := take(t, c, pods, quiet(ab))
	pods.add("a", -1)
	g.Done(100) // the quiet tenant is active, with nothing in flight

	var held []*Grant
	for i := range 6 {
		ng, pod := take(t, c, pods, noisy(ab))
		if want := []string{"a", "b"}[i/3]; pod != want {
			t.Errorf("noisy request %d went to %s, want %s", i, pod, want)
		}
		held = append(held, ng)
	}
	if pods.busy["a"] != 3 || pods.busy["b"] != 3 {
		t.Fatalf("busy %v: want 3 of 4 slots on each pod", pods.busy)
	}
	// Every noisy request preferring pod a went to a until its headroom,
	// then to b: none took a's last slot.
	res := admitAsync(context.Background(), c, noisy(ab))
	eventuallyQueued(t, c, 1)
	qg, pod := take(t, c, pods, quiet(ab))
	if pod != "a" {
		t.Errorf("quiet request went to %s, want its pick a", pod)
	}
	if s := c.Stats(); s.HeadroomKept == 0 {
		t.Errorf("stats %+v: want the noisy requests counted as keeping headroom", s)
	}
	// The quiet tenant's request ends and it goes idle: once its window
	// passes, the waiting noisy request may take any slot.
	pods.add("a", -1)
	qg.Done(100)
	clk.advance(11 * time.Second)
	c.recheck()
	r := <-res
	if r.err != nil || !r.g.Queued() {
		t.Fatalf("noisy request after the quiet tenant went idle: got %v, want a grant after waiting", r.err)
	}
	if i := r.g.Place(ab, nil); i != -1 {
		t.Errorf("Place = %d after the window, want -1 (its pick: no headroom to keep)", i)
	}
	r.g.Done(100)
	for _, g := range held {
		g.Done(100)
	}
}

// TestHeadroomForHigherBands: a sheddable request leaves the headroom to
// an active critical tenant even when it is the only sheddable tenant.
func TestHeadroomForHigherBands(t *testing.T) {
	c, pods, _ := headroomController(t, 4)
	p := []string{"p"}
	g, _ := take(t, c, pods, Request{Tenant: "gold", Band: auth.PriorityCritical, Tokens: 10, Pods: p})
	pods.add("p", -1)
	g.Done(10)
	for range 3 {
		take(t, c, pods, Request{Tenant: "batch", Band: auth.PrioritySheddable, Tokens: 10, Pods: p})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Admit(ctx, Request{Tenant: "batch", Band: auth.PrioritySheddable, Pods: p}); err == nil {
		t.Fatal("a fourth sheddable request took the critical band's headroom")
	}
	take(t, c, pods, Request{Tenant: "gold", Band: auth.PriorityCritical, Tokens: 10, Pods: p})
}

// TestHeadroomCostsNothingWhenSharesAreMet: two backlogged tenants at
// their weights' shares fill every slot: headroom is kept only for a
// tenant under its share.
func TestHeadroomCostsNothingWhenSharesAreMet(t *testing.T) {
	c, pods, _ := headroomController(t, 4)
	p := []string{"p"}
	take(t, c, pods, Request{Tenant: "small", Weight: 1, Tokens: 10, Pods: p})
	for range 3 {
		take(t, c, pods, Request{Tenant: "big", Weight: 3, Tokens: 10, Pods: p})
	}
	if pods.busy["p"] != 4 {
		t.Fatalf("busy %d, want all 4 slots used by tenants at their shares (1:3)", pods.busy["p"])
	}
}

// TestHeadroomAlone: a tenant alone is never held back.
func TestHeadroomAlone(t *testing.T) {
	c, pods, _ := headroomController(t, 4)
	for range 4 {
		take(t, c, pods, Request{Tenant: "only", Tokens: 10, Pods: []string{"p"}})
	}
	if s := c.Stats(); s.HeadroomKept != 0 {
		t.Errorf("HeadroomKept = %d for a tenant alone, want 0", s.HeadroomKept)
	}
}

func eventuallyQueued(t *testing.T, c *Controller, n int) {
	t.Helper()
	eventually(t, "the request to queue", func() bool {
		q := c.Stats().Queued
		return q[0]+q[1]+q[2] == n
	})
}

// TestPlaceSkipsASaturatedPick: a request admitted because a pod after
// its saturated pick has room goes there, not into the pick's engine
// queue; with no pod saturated, or flow control off, it keeps its pick.
func TestPlaceSkipsASaturatedPick(t *testing.T) {
	c, pods, _ := headroomController(t, 1)
	ab := []string{"a", "b"}
	if _, pod := take(t, c, pods, Request{Tenant: "t", Pods: ab}); pod != "a" {
		t.Fatalf("first request went to %s, want its pick a", pod)
	}
	if _, pod := take(t, c, pods, Request{Tenant: "t", Pods: ab}); pod != "b" {
		t.Fatalf("second request went to %s, want b, the pod with room", pod)
	}
	off := testConfig()
	off.Enabled = false
	g, err := New(off, pods, nil).Admit(context.Background(), Request{Tenant: "t", Pods: ab})
	if err != nil || g.Place(ab, nil) != -1 {
		t.Fatalf("flow control off: got %v, Place %d, want its pick", err, g.Place(ab, nil))
	}
}

// TestHeadroomLeavesBackloggedTenantsToTheCounters: a tenant under its
// share with one request waiting (just arrived) still has headroom kept;
// one with a backlog has not: the queue's token counters order it against
// the others, and the headroom (which counts requests) must not skew the
// token shares they keep.
func TestHeadroomLeavesBackloggedTenantsToTheCounters(t *testing.T) {
	c, pods, _ := headroomController(t, 4)
	p := []string{"p"}
	var held []*Grant
	for range 4 {
		g, _ := take(t, c, pods, Request{Tenant: "big", Tokens: 10, Pods: p})
		held = append(held, g)
	}
	restricted := func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.restrictedLocked("big", auth.PriorityStandard, c.now())
	}
	var res []<-chan admitResult
	for i := range 2 {
		res = append(res, admitAsync(context.Background(), c, Request{Tenant: "small", Tokens: 10, Pods: p}))
		eventuallyQueued(t, c, i+1)
		if got, want := restricted(), i == 0; got != want {
			t.Errorf("small with %d waiting: big restricted %v, want %v", i+1, got, want)
		}
	}
	for i, ch := range res {
		pods.add("p", -1)
		held[i].Done(10)
		r := <-ch
		if r.err != nil {
			t.Fatalf("small: got %v, want a grant", r.err)
		}
		r.g.Started()
	}
}
