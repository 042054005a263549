package hierarchy

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// smallScaleConfig is a fleet small enough for a unit test whose caches
// fill during the warm-up and evict while measured: 8 cells of 4 pods of
// 384 blocks of 512 tokens, 4 tenants of the small trace, 400 s of which
// the first 100 warm up, about one request running a pod.
func smallScaleConfig() ScaleConfig {
	cfg := DefaultScaleConfig()
	cfg.TracePath = smallTrace
	cfg.Cells, cfg.PodsPerCell, cfg.BlocksPerPod, cfg.Tenants = 8, 4, 384, 4
	cfg.Seconds, cfg.WarmupSeconds = 400, 100
	cfg.LinearEvery = 4
	// 12 requests a second over 32 pods: about one running a pod.
	cfg.DecodeMsPerToken = 8
	return cfg
}

// TestRunScaleSmall runs the scale mode on a small fleet, every request's
// oracle checked against a scan of every cell's cache, and checks its
// invariants: the oracle agrees with the scan, no router's reuse above the
// deepest prefix held, probes within the budget, the caches full and
// evicting while measured, the causes of the requests below the oracle
// adding up, every figure the issue names present and sane.
func TestRunScaleSmall(t *testing.T) {
	cfg := smallScaleConfig()
	cfg.checkOracle = true
	rep, err := RunScale(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if checks, wrong := rep.oracleChecks, rep.oracleWrong; checks != rep.Requests || wrong != 0 {
		t.Errorf("oracle checked on %d of %d requests, %d differing from the scan of every cell; want all checked, none differing", checks, rep.Requests, wrong)
	}
	// 4 tenants at about 3 requests a second for 300 s measured.
	if rep.Requests < 2000 || rep.Tenants != 4 || rep.TraceSeconds < 290 || rep.TraceSeconds > 300 {
		t.Errorf("requests %d tenants %d over %v s, want > 2000, 4 and about 300 s", rep.Requests, rep.Tenants, rep.TraceSeconds)
	}
	if rep.CacheFill < 0.95 || rep.EvictedBlocks == 0 {
		t.Errorf("cache fill %v with %d blocks evicted, want full caches that evict", rep.CacheFill, rep.EvictedBlocks)
	}
	if !(rep.ReuseOracle > 0) || rep.ReuseHier > rep.ReuseDeepest || rep.ReuseOracle > rep.ReuseDeepest || math.Abs(rep.ReuseLoss) > 1 {
		t.Errorf("reuse oracle %v hier %v deepest %v loss %v, want 0 < oracle <= deepest, hier <= deepest, |loss| <= 1",
			rep.ReuseOracle, rep.ReuseHier, rep.ReuseDeepest, rep.ReuseLoss)
	}
	for _, s := range []float64{rep.DeepShareOracle, rep.DeepShareHier, rep.DeepShareDeepest} {
		if !(s > 0 && s <= 1) {
			t.Errorf("deep shares %v %v %v, want each in (0, 1]: the laps of the trace come back deep", rep.DeepShareOracle, rep.DeepShareHier, rep.DeepShareDeepest)
			break
		}
	}
	c := rep.BelowOracle
	if c.Probed+c.Unknown+c.FalseCandidate+c.Outbid != rep.RequestsBelowOracle {
		t.Errorf("causes %+v do not add up to the %d requests below the oracle", c, rep.RequestsBelowOracle)
	}
	if rep.ProbesP95 > cfg.MaxProbes || rep.ProbesMean > float64(cfg.MaxProbes) || rep.ProbesMean < 1 {
		t.Errorf("probes p95 %d mean %v, want <= %d and at least one a request once warm", rep.ProbesP95, rep.ProbesMean, cfg.MaxProbes)
	}
	if rep.SummaryBytesPerCell <= 0 || rep.GossipBytesPerS <= 0 || rep.BankBytes <= 0 || rep.GlobalHeapBytes < rep.BankBytes {
		t.Errorf("summary %v B/cell, gossip %v B/s, bank %d, state %d: want all > 0 and the state to include the bank",
			rep.SummaryBytesPerCell, rep.GossipBytesPerS, rep.BankBytes, rep.GlobalHeapBytes)
	}
	if !(rep.DecisionP50Us > 0 && rep.DecisionP50Us <= rep.DecisionP99Us) || rep.DecisionLinearP99Us <= 0 {
		t.Errorf("decision p50 %v p99 %v linear p99 %v us, want 0 < p50 <= p99 and a linear sample", rep.DecisionP50Us, rep.DecisionP99Us, rep.DecisionLinearP99Us)
	}
	b, _ := json.Marshal(rep)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reuse_loss", "probes_p95", "summary_bytes_per_cell", "gossip_bytes_per_s", "decision_p50_us", "decision_p99_us",
		"global_heap_bytes", "reuse_oracle", "reuse_hier", "reuse_deepest", "deep_share_oracle", "below_oracle", "cache_fill"} {
		if _, ok := m[k]; !ok {
			t.Errorf("scale JSON lacks %q", k)
		}
	}
	for _, bad := range []func(*ScaleConfig){
		func(c *ScaleConfig) { c.Cells = 0 },
		func(c *ScaleConfig) { c.WarmupSeconds = c.Seconds },
		func(c *ScaleConfig) { c.Seconds = 0 },
		func(c *ScaleConfig) { c.BlockSize = 300 },
	} {
		c := smallScaleConfig()
		bad(&c)
		if _, err := RunScale(context.Background(), c); err == nil {
			t.Errorf("RunScale with %+v got no error", c)
		}
	}
}

// TestScaleBlocksOfAHashID checks what the scale mode's default rests on:
// on the trace, whose prompts share only whole hash ids of 512 tokens,
// blocks of 512 tokens sampled at stride 1 give the reuse of blocks of 16
// sampled at stride 32 (the same token positions), with caches of the
// same size in tokens and nothing evicted, within a point (the load terms
// round differently, so a few decisions differ).
func TestScaleBlocksOfAHashID(t *testing.T) {
	big := smallScaleConfig()
	big.BlocksPerPod, big.Seconds, big.WarmupSeconds, big.LinearEvery = 4096, 150, 0, 0
	small := big
	small.BlockSize, small.Stride, small.ProbeSlack = 16, 32, 32
	small.BlocksPerPod = big.BlocksPerPod * trace.TokensPerID / 16
	small.DeepTokens = big.DeepTokens
	a, err := RunScale(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	b, err := RunScale(context.Background(), small)
	if err != nil {
		t.Fatal(err)
	}
	if a.EvictedBlocks != 0 || b.EvictedBlocks != 0 || a.Requests != b.Requests {
		t.Fatalf("evicted %d and %d blocks over %d and %d requests, want none evicted over the same requests", a.EvictedBlocks, b.EvictedBlocks, a.Requests, b.Requests)
	}
	for _, p := range [][2]float64{{a.ReuseOracle, b.ReuseOracle}, {a.ReuseHier, b.ReuseHier}, {a.DeepShareOracle, b.DeepShareOracle}} {
		if !(p[0] > 0) || math.Abs(p[0]-p[1]) > 0.01 {
			t.Errorf("512-token blocks vs 16-token blocks: %v vs %v, want > 0 and within 0.01 (oracle reuse %v/%v, hier %v/%v, deep share %v/%v)",
				p[0], p[1], a.ReuseOracle, b.ReuseOracle, a.ReuseHier, b.ReuseHier, a.DeepShareOracle, b.DeepShareOracle)
		}
	}
}

// TestLoadOrderMoved checks the incrementally kept load order against
// global.LoadOrder after every hand-off counted on random cells.
func TestLoadOrderMoved(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	views := make([]global.CellView, 150)
	for i := range views {
		pods := make([]int, 1+r.IntN(8))
		for p := range pods {
			pods[p] = r.IntN(4)
		}
		var g gossip.Load
		g.SetLightest(pods)
		views[i] = global.CellView{ID: "c", Alive: i%13 != 5, Load: global.CellLoad{Pods: len(pods), LeastPodBlocks: g.LeastPodBlocks,
			Lightest: g.Lightest, NLightest: g.NLightest, ActiveBlocks: r.IntN(40), ActiveRequests: r.IntN(3)}}
	}
	o := newLoadOrder(views)
	for step := range 2000 {
		c := r.IntN(len(views))
		pick := -1 // unprobed, or the pick of a probe
		if l := &views[c].Load; r.IntN(3) > 0 {
			pick = l.Lightest[r.IntN(l.NLightest)]
		}
		views[c].Load.Routed(1+r.IntN(30), pick)
		o.moved(views, c)
		if want := global.LoadOrder(views); !slices.Equal(o.cells, want) {
			t.Fatalf("step %d (cell %d): order %v, want %v", step, c, o.cells, want)
		}
		if step%500 == 499 {
			o.reset(views)
		}
	}
}
