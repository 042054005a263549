package fairness

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// TestShortRun runs every phase briefly through a real cell and simulated
// pods and checks the report's fields and invariants (not the targets,
// which need the full run): every request is accounted for once, shares
// sum to one, the top-level figures are the phases' own.
func TestShortRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Records, cfg.Duration = 200, 2*time.Second
	cfg.MaxInputTokens, cfg.MaxOutputTokens = 1024, 4
	cfg.Pods, cfg.MaxRunning = 1, 2
	cfg.PrefillPerToken, cfg.DecodePerToken = 20*time.Microsecond, 2*time.Millisecond
	cfg.MaxQueueWait, cfg.PriorityMaxWait = 5*time.Second, 300*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := Run(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]any
	json.Unmarshal(raw, &top)
	for _, k := range []string{"quiet_p99_ratio", "share_error_max", "critical_shed_while_sheddable_queued", "reuse_loss_vs_off",
		"solo", "mixed", "mixed_no_headroom", "mixed_off", "shares", "priority", "capacity_rps",
		"quiet_p99_ratio_no_headroom", "noisy_served_vs_no_headroom"} {
		if _, ok := top[k]; !ok {
			t.Errorf("report has no %q: %s", k, raw)
		}
	}
	if !(rep.CapacityRPS > 0) || rep.NoisyRPS <= rep.QuietRPS {
		t.Errorf("capacity %v, quiet %v, noisy %v rps: want a capacity and the noisy tenant the faster", rep.CapacityRPS, rep.QuietRPS, rep.NoisyRPS)
	}
	for _, p := range []*Phase{rep.Solo, rep.Mixed, rep.MixedNoHeadroom, rep.MixedOff, rep.Shares, rep.Priority} {
		if p.Requests == 0 || p.Served+p.Shed+p.Errors != p.Requests {
			t.Errorf("%s: %d requests, %d served + %d shed + %d errors: want every request counted once", p.Name, p.Requests, p.Served, p.Shed, p.Errors)
		}
		var sent int
		var share, weight float64
		for _, x := range p.Tenants {
			sent += x.Requests
			share += x.TokenShare
			weight += x.WeightShare
			byWhy := 0
			for _, n := range x.ErrorsBy {
				byWhy += n
			}
			if byWhy != x.Errors {
				t.Errorf("%s/%s: %d errors, %v by kind", p.Name, x.Name, x.Errors, x.ErrorsBy)
			}
			if x.Served+x.Shed+x.Errors != x.Requests {
				t.Errorf("%s/%s: %d requests, %d served + %d shed + %d errors", p.Name, x.Name, x.Requests, x.Served, x.Shed, x.Errors)
			}
			if x.Served > 0 && (x.TTFTP50Ms <= 0 || x.TTFTP99Ms < x.TTFTP50Ms) {
				t.Errorf("%s/%s: TTFT p50 %v p99 %v ms", p.Name, x.Name, x.TTFTP50Ms, x.TTFTP99Ms)
			}
		}
		if share == 0 {
			share = 1 // nothing's first token came in the middle half
		}
		if sent != p.Requests || math.Abs(weight-1) > 1e-9 || math.Abs(share-1) > 1e-9 {
			t.Errorf("%s: tenants sent %d of %d, token shares sum to %v, weight shares to %v; want all, 1, 1", p.Name, sent, p.Requests, share, weight)
		}
		if p.Reuse < 0 || p.Reuse > 1 {
			t.Errorf("%s: reuse %v out of [0, 1]", p.Name, p.Reuse)
		}
	}
	if rep.Solo.FlowControl != true || rep.MixedOff.FlowControl != false || len(rep.Solo.Tenants) != 1 {
		t.Errorf("phases: solo flow %v with %d tenants, mixed_off flow %v", rep.Solo.FlowControl, len(rep.Solo.Tenants), rep.MixedOff.FlowControl)
	}
	if want := tenantOf(rep.Mixed, "quiet").TTFTP99Ms / tenantOf(rep.Solo, "quiet").TTFTP99Ms; rep.QuietP99Ratio != want {
		t.Errorf("quiet_p99_ratio %v, want mixed over solo %v", rep.QuietP99Ratio, want)
	}
	if want := tenantOf(rep.MixedNoHeadroom, "quiet").TTFTP99Ms / tenantOf(rep.Solo, "quiet").TTFTP99Ms; rep.QuietP99RatioNoHeadroom != want {
		t.Errorf("quiet_p99_ratio_no_headroom %v, want mixed_no_headroom over solo %v", rep.QuietP99RatioNoHeadroom, want)
	}
	if rep.Mixed.Headroom != cfg.Headroom || rep.MixedNoHeadroom.Headroom != 0 || !rep.MixedNoHeadroom.FlowControl || !(rep.NoisyServedVsNoHeadroom > 0) {
		t.Errorf("headroom %v in mixed, %v in mixed_no_headroom (flow %v), noisy served ratio %v: want the config's, 0 with flow control on, a ratio",
			rep.Mixed.Headroom, rep.MixedNoHeadroom.Headroom, rep.MixedNoHeadroom.FlowControl, rep.NoisyServedVsNoHeadroom)
	}
	if rep.ReuseCompared < 0 || rep.ReuseCompared > min(rep.Mixed.Served, rep.MixedOff.Served) || rep.ReuseLossVsOff > 1 {
		t.Errorf("reuse compared over %d requests (mixed served %d, mixed_off %d), loss %v", rep.ReuseCompared,
			rep.Mixed.Served, rep.MixedOff.Served, rep.ReuseLossVsOff)
	}
	if rep.CriticalShedWhileSheddableQueued != rep.Priority.CriticalShedWhileSheddableQueued {
		t.Errorf("critical_shed_while_sheddable_queued %d, priority phase's %d", rep.CriticalShedWhileSheddableQueued, rep.Priority.CriticalShedWhileSheddableQueued)
	}
	t.Logf("%s", raw)
}

// TestCriticalShedWhileSheddable checks the count against hand-made
// timelines: a critical refusal counts only while a sheddable request was
// sent and had neither its first chunk nor its answer.
func TestCriticalShedWhileSheddable(t *testing.T) {
	t0 := time.Unix(100, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ts := []*tenant{{name: "c", priority: auth.PriorityCritical}, {name: "s", priority: auth.PrioritySheddable}}
	shedC := func(ms int) outcome { return outcome{tenant: "c", sent: at(0), done: at(ms), status: 429} }
	outs := []outcome{
		{tenant: "s", sent: at(10), first: at(50), done: at(90), status: 200}, // outstanding 10..50
		{tenant: "s", sent: at(100), done: at(200), status: 429},              // outstanding 100..200
		shedC(5),   // before any sheddable request
		shedC(30),  // while the first waits
		shedC(70),  // the first has its first chunk
		shedC(150), // while the second waits
		{tenant: "c", sent: at(0), first: at(160), done: at(170), status: 200}, // served: never counts
	}
	if got := criticalShedWhileSheddable(ts, outs); got != 2 {
		t.Fatalf("got %d, want 2", got)
	}
}

// TestSummariseShares: token shares count the middle half of the phase
// and compare with the weights.
func TestSummariseShares(t *testing.T) {
	t0 := time.Unix(100, 0)
	ts := []*tenant{{name: "a", weight: 1}, {name: "b", weight: 3}}
	served := func(name string, first time.Duration, tokens int) outcome {
		return outcome{tenant: name, sent: t0, first: t0.Add(first), done: t0.Add(first + time.Millisecond), status: 200, prompt: tokens}
	}
	outs := []outcome{
		served("a", 0, 1000), // before the middle half: not counted
		served("a", 3*time.Second, 100),
		served("b", 4*time.Second, 300),
		served("b", 9*time.Second, 1000), // after it
	}
	p := summarise("shares", true, ts, outs, 10*time.Second)
	a, b := tenantOf(p, "a"), tenantOf(p, "b")
	if a.ServedTokens != 100 || b.ServedTokens != 300 || a.TokenShare != 0.25 || b.WeightShare != 0.75 || a.ShareError != 0 {
		t.Fatalf("a %+v, b %+v; want 100 and 300 tokens, shares matching the weights", a, b)
	}
}

// TestReuseLoss compares only the requests both phases served.
func TestReuseLoss(t *testing.T) {
	ok := func(tenant string, idx, prompt, cached int) outcome {
		t0 := time.Unix(1, 0)
		return outcome{tenant: tenant, idx: idx, sent: t0, first: t0, done: t0, status: 200, prompt: prompt, cached: cached}
	}
	on := []outcome{ok("q", 0, 100, 40), ok("q", 1, 100, 40), ok("n", 0, 100, 0), {tenant: "n", idx: 1, status: 429}}
	off := []outcome{ok("q", 0, 100, 50), ok("q", 1, 100, 50), ok("n", 1, 100, 100)}
	loss, n := reuseLoss(on, off)
	if n != 2 || math.Abs(loss-0.2) > 1e-12 {
		t.Fatalf("loss %v over %d requests, want 0.2 over 2 (q's two)", loss, n)
	}
}
