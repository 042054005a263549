package hierarchy

import (
	"context"
	"testing"

	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/global"
)

// TestTierIsTheRouters checks that both models decide with the global
// tier's current search and choice: at the defaults, the quality run's and
// the scale run's configurations are global.DefaultSearchConfig and
// DefaultChooseConfig (the scale run's slack apart), with the search's
// bound weighing a block as the choice does (prefill and move), as
// global.Router sets it; and the models' own settings reach them.
func TestTierIsTheRouters(t *testing.T) {
	wantChoose := global.DefaultChooseConfig()
	wantSearch := global.DefaultSearchConfig()
	wantSearch.PrefillWeight = wantChoose.BlockWeight()
	wantSearch.PressureWeight = wantChoose.PressureWeight
	for _, c := range []struct {
		name     string
		tier     tierConfig
		slack    int
		pressure float64
	}{
		{"quality", DefaultConfig().tier(), DefaultConfig().ProbeSlack, wantChoose.PressureWeight},
		// The scale model's cells are one cache each and report no
		// evictions: it weighs no pressure.
		{"scale", DefaultScaleConfig().tier(), DefaultScaleConfig().ProbeSlack, 0},
	} {
		search, choose := c.tier.configs()
		ws, wc := wantSearch, wantChoose
		ws.Slack = c.slack
		ws.PressureWeight, wc.PressureWeight = c.pressure, c.pressure
		if search != ws || choose != wc {
			t.Errorf("%s: search %+v choose %+v, want %+v and %+v", c.name, search, choose, ws, wc)
		}
	}
	qc := DefaultConfig()
	qc.FullAt = 0.75
	if search, _ := qc.tier().configs(); search.FullAt != 0.75 {
		t.Errorf("quality with FullAt 0.75: search %+v", search)
	}
	qc.AvoidBusy = true
	if _, choose := qc.tier().configs(); !choose.AvoidBusy {
		t.Errorf("quality with AvoidBusy: choose %+v", choose)
	}
	qc.FullAt = 1.5
	if err := qc.Validate(); err == nil {
		t.Errorf("FullAt 1.5 validated")
	}
	sc := DefaultScaleConfig()
	sc.MaxProbes, sc.ProbeCold, sc.MoveWeight = 4, false, 3
	search, choose := sc.tier().configs()
	if search.MaxProbes != 4 || search.ProbeCold || choose.MoveWeight != 3 || search.PrefillWeight != 4 {
		t.Errorf("scale with 4 probes, no cold probes, move weight 3: search %+v choose %+v", search, choose)
	}
}

// TestRunScaleColdPath checks the scale run's cold path: with ProbeCold
// every cold request is probed on its hashed cells (no request goes
// unprobed), without it every cold request goes unprobed; and the move
// weight reaches the choice (the warm decisions, hence the reuse, change
// with it).
func TestRunScaleColdPath(t *testing.T) {
	run := func(probeCold bool, move float64) *ScaleReport {
		t.Helper()
		cfg := smallScaleConfig()
		cfg.Seconds, cfg.WarmupSeconds, cfg.LinearEvery = 200, 0, 0 // cold while the first summaries are empty
		cfg.ProbeCold, cfg.MoveWeight = probeCold, move
		rep, err := RunScale(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if rep.ProbeCold != probeCold || rep.MoveWeight != move {
			t.Errorf("report says probe_cold %v move_weight %v, want %v and %v", rep.ProbeCold, rep.MoveWeight, probeCold, move)
		}
		return rep
	}
	probed := run(true, global.DefaultMoveWeight)
	if probed.ColdRequests == 0 || probed.UnprobedRequests != 0 || probed.ProbesP95 > 2 {
		t.Errorf("cold probed: %d cold, %d unprobed, probes p95 %d; want some cold, none unprobed, p95 <= 2",
			probed.ColdRequests, probed.UnprobedRequests, probed.ProbesP95)
	}
	unprobed := run(false, global.DefaultMoveWeight)
	if unprobed.ColdRequests == 0 || unprobed.UnprobedRequests != unprobed.ColdRequests {
		t.Errorf("cold unprobed: %d cold, %d unprobed; want every cold request unprobed", unprobed.ColdRequests, unprobed.UnprobedRequests)
	}
	noMove := run(true, 0)
	if noMove.ReuseHier == probed.ReuseHier && noMove.RequestsBelowOracle == probed.RequestsBelowOracle {
		t.Errorf("move weight 0 and %v gave the same run (reuse %v, %d below the oracle): the weight does not reach the choice",
			float64(global.DefaultMoveWeight), probed.ReuseHier, probed.RequestsBelowOracle)
	}
}

// TestPressureDefaultsAgree: the global choice weighs a pick's expected
// evictions as the cells' kv-cost does (global may not import cell, so the
// two defaults are separate constants), and the quality run uses both.
func TestPressureDefaultsAgree(t *testing.T) {
	if plugins.DefaultPressureWeight != global.DefaultPressureWeight {
		t.Fatalf("cells' pressure weight %v, global choice's %v: want equal", plugins.DefaultPressureWeight, global.DefaultPressureWeight)
	}
	search, choose := DefaultConfig().tier().configs()
	if choose.PressureWeight != plugins.DefaultPressureWeight || search.PressureWeight != choose.PressureWeight {
		t.Fatalf("quality run: choice pressure %v, search %v, want %v", choose.PressureWeight, search.PressureWeight, plugins.DefaultPressureWeight)
	}
}
