package cell

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/epp/epptest"
)

// How a picker-mode prefix wait ends besides the prefill it waits for:
// the bound, the gateway cancelling, a subset without the prefilling pod,
// a fallback that served (helpers in api_epp_wait_test.go).

// TestEPPPrefixWaitBound holds the first turn at its pod past the
// follow-up's bound (routing.prefix_wait.max_wait 300ms): the follow-up is
// answered, to the same pod, once the bound passed and while the first
// turn is still held, and the wait is counted as "bound".
func TestEPPPrefixWaitBound(t *testing.T) {
	const bound = 300 * time.Millisecond
	a := newGatedPod(t, 1)
	c, client := waitCell(t, map[string]*gatedPod{"a": a}, func(cfg *Config) { cfg.Routing.PrefixWait.MaxWait = bound })
	first := promptTokens(1)
	firstDone := goDo(context.Background(), client, turn(first))
	waitFor(t, "the first turn at a", func() bool { return a.arrived() == 1 })
	sent := time.Now()
	o := await(t, "the follow-up", goDo(context.Background(), client, turn(followUpOf(first, 2))))
	if took := o.at.Sub(sent); took < bound {
		t.Fatalf("the follow-up took %v, want at least the bound %v", took, bound)
	}
	if o.out.Served != a.addr() || !pending(firstDone) || strings.Join(a.log(), ",") != "req,req" {
		t.Fatalf("follow-up served by %s, a saw %v: want a, beside the first turn still held", o.out.Served, a.log())
	}
	for _, w := range []struct {
		outcome string
		want    float64
	}{{"bound", 1}, {"stored", 0}, {"cancelled", 0}} {
		if got := metric(t, c, "cellrouter_prefix_waits_total", `outcome="`+w.outcome+`"`); got != w.want {
			t.Errorf("cellrouter_prefix_waits_total{outcome=%s} %v, want %v", w.outcome, got, w.want)
		}
	}
	if got := metric(t, c, "cellrouter_prefix_wait_seconds_sum"); got < bound.Seconds() {
		t.Errorf("cellrouter_prefix_wait_seconds_sum %v, want at least %v", got, bound.Seconds())
	}
	a.open()
	await(t, "the first turn", firstDone)
}

// TestEPPPrefixWaitCancelled cancels the gateway's stream while its
// follow-up waits: the call ends there, as proxy mode's does when its
// client leaves: its ticket and its own prefill leave the pod, its
// flow-control grant is done (charged its estimate: no usage came), the
// request never reaches the pod, and the wait is counted "cancelled". The
// pod's room (flow_control.max_inflight_per_pod 2) is free again: the
// next request is picked at once, without queueing.
func TestEPPPrefixWaitCancelled(t *testing.T) {
	a := newGatedPod(t, 1)
	c, client := waitCell(t, map[string]*gatedPod{"a": a}, func(cfg *Config) {
		cfg.FlowControl.MaxInflightPerPod = 2
		cfg.FlowControl.QueueDepthThreshold = 0
		cfg.FlowControl.ActiveBlocksThreshold = 0
	})
	first := promptTokens(1)
	firstDone := goDo(context.Background(), client, turn(first))
	waitFor(t, "the first turn at a", func() bool { return a.arrived() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	follow := followUpOf(first, 2)
	next := goDo(ctx, client, turn(follow))
	waitFor(t, "the follow-up to wait", func() bool { return c.router.prefixWaiting.Load() == 1 })
	if u := c.router.tracker.Usage("a"); u.Requests != 2 || c.router.prefills.Len("a") != 2 {
		t.Fatalf("while the follow-up waits: a carries %d requests and %d prefills, want 2 and 2", u.Requests, c.router.prefills.Len("a"))
	}
	if _, ok := c.flow.Stats().ServedTokens[""]; ok {
		t.Fatal("a grant was done before any call ended")
	}
	cancel()
	select {
	case o := <-next:
		if o.err == nil {
			t.Fatalf("the cancelled call returned %+v, want its context's error", o.out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	waitFor(t, "the cancelled call to end", func() bool {
		return c.router.prefixWaiting.Load() == 0 && c.router.tracker.Usage("a").Requests == 1 && c.router.prefills.Len("a") == 1 &&
			metric(t, c, "cellrouter_requests_in_flight") == 1
	})
	// Grant.Done is the only writer of a tenant's served tokens; a call
	// that ends without a usage report keeps the estimate it was charged
	// (its prompt and max_tokens), as in proxy mode.
	if served, ok := c.flow.Stats().ServedTokens[""]; !ok || served != float64(len(follow)+16) {
		t.Fatalf("the cancelled call's grant: served %v (recorded %v), want done with its estimate %d", served, ok, len(follow)+16)
	}
	if got := metric(t, c, "cellrouter_prefix_waits_total", `outcome="cancelled"`); got != 1 {
		t.Errorf("cellrouter_prefix_waits_total{outcome=cancelled} %v, want 1", got)
	}
	call := turn(promptTokens(7))
	call.NoUpstream = true
	out, err := epptest.Do(context.Background(), client, call)
	if err != nil || out.Immediate != nil || out.Destination != a.addr() {
		t.Fatalf("the next request: %+v, %v: want picked to a at once", out, err)
	}
	st := c.flow.Stats()
	for band, left := range st.Left {
		if len(left) != 0 {
			t.Fatalf("band %d: requests left the queue %v, want none queued", band, left)
		}
	}
	if a.arrived() != 1 {
		t.Fatalf("a saw %d requests, want 1 (the cancelled follow-up never went)", a.arrived())
	}
	a.open()
	await(t, "the first turn", firstDone)
	waitFor(t, "every call to end", func() bool {
		return c.router.tracker.Usage("a").Requests == 0 && c.router.prefills.Len("a") == 0
	})
}

// TestEPPPrefixWaitHonoursSubset sends a follow-up whose previous turn is
// prefilling on a pod outside the gateway's subset: it is picked within
// the subset at once, with nothing to wait for there.
func TestEPPPrefixWaitHonoursSubset(t *testing.T) {
	a, b := newGatedPod(t, 1), newGatedPod(t, 0)
	c, client := waitCell(t, map[string]*gatedPod{"a": a, "b": b}, nil)
	first := promptTokens(1)
	firstDone := goDo(context.Background(), client, turn(first, a.addr()))
	waitFor(t, "the first turn at a", func() bool { return a.arrived() == 1 })
	o := await(t, "the follow-up", goDo(context.Background(), client, turn(followUpOf(first, 2), b.addr())))
	if o.out.Destination != b.addr() || o.out.Served != b.addr() || !pending(firstDone) {
		t.Fatalf("follow-up sent to %s: want b only, at once", o.out.Destination)
	}
	for _, w := range []string{"stored", "bound", "cancelled"} {
		if got := metric(t, c, "cellrouter_prefix_waits_total", `outcome="`+w+`"`); got != 0 {
			t.Errorf("cellrouter_prefix_waits_total{outcome=%s} %v, want 0", w, got)
		}
	}
	a.open()
	await(t, "the first turn", firstDone)
}

// TestEPPPrefixWaitServedElsewhere has the gateway serve a waited
// follow-up from another pod than the pick (it reports b in
// x-gateway-destination-endpoint-served): the call moves to b as a
// retry, its prefill registration leaves a, and b learns its blocks.
func TestEPPPrefixWaitServedElsewhere(t *testing.T) {
	a, b := newGatedPod(t, 1), newGatedPod(t, 0)
	c, client := waitCell(t, map[string]*gatedPod{"a": a, "b": b}, nil)
	first := promptTokens(1)
	firstDone := goDo(context.Background(), client, turn(first, a.addr()))
	waitFor(t, "the first turn at a", func() bool { return a.arrived() == 1 })
	follow := followUpOf(first, 2)
	call := turn(follow)
	call.ServedOverride = b.addr()
	next := goDo(context.Background(), client, call)
	waitFor(t, "the follow-up to wait", func() bool { return c.router.prefixWaiting.Load() == 1 })
	a.open()
	await(t, "the first turn", firstDone)
	o := await(t, "the follow-up", next)
	if o.out.Destinations()[0] != a.addr() || o.out.ResponseSetHeaders[strings.ToLower(PodHeader)] != "b" {
		t.Fatalf("follow-up picked %v, pod header %q: want a picked and b reported", o.out.Destinations(), o.out.ResponseSetHeaders[strings.ToLower(PodHeader)])
	}
	waitFor(t, "every call to end", func() bool {
		return c.router.tracker.Usage("a").Requests == 0 && c.router.tracker.Usage("b").Requests == 0 &&
			c.router.prefills.Len("a") == 0 && c.router.prefills.Len("b") == 0
	})
	if got := metric(t, c, "cellrouter_upstream_retries_total"); got != 1 {
		t.Errorf("retries %v, want 1 (the served fallback)", got)
	}
	if _, all := dryRoute(t, c, follow); all["b"].MatchedBlocks != len(follow)/16 {
		t.Errorf("b after serving: %+v, want the follow-up's %d blocks", all["b"], len(follow)/16)
	}
}
