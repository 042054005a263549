package compare

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/report"
)

// TestSaturationFigures checks the saturation figures and their verdicts
// on made-up mode results.
func TestSaturationFigures(t *testing.T) {
	mode := func(p50, p90, p99, cached float64) *ModeResult {
		return &ModeResult{Summary: report.Summary{TTFTP50Ms: p50, TTFTP90Ms: p90, TTFTP99Ms: p99, CachedTokenRatio: cached,
			TTFTFromArrivalP50Ms: p50, TTFTFromArrivalP90Ms: p90, TTFTFromArrivalP99Ms: p99}}
	}
	// behind is a mode whose requests waited add ms for the generator's
	// cap: its TTFT from arrival is above the one from the send.
	behind := func(m *ModeResult, add float64) *ModeResult {
		m.Delayed = 10
		m.TTFTFromArrivalP50Ms += add
		m.TTFTFromArrivalP90Ms += add
		m.TTFTFromArrivalP99Ms += add
		return m
	}
	tests := []struct {
		name                   string
		kv, rr, nospec, approx *ModeResult
		reuse, rrpass, nsPass  bool
		approxPass, pass       bool
	}{
		{"all pass", mode(100, 200, 400, 0.38), mode(200, 400, 800, 0.2), mode(100, 250, 400, 0.35), mode(140, 300, 500, 0.3),
			true, true, true, true, true},
		{"kv worse than nospec at p99", mode(100, 200, 401, 0.38), mode(200, 400, 800, 0.2), mode(100, 250, 400, 0.35), mode(140, 300, 500, 0.3),
			true, true, false, true, false},
		{"reuse short", mode(100, 200, 400, 0.35), mode(200, 400, 800, 0.2), mode(100, 250, 400, 0.35), mode(140, 300, 500, 0.3),
			false, true, true, true, false},
		{"approx collapses", mode(100, 200, 400, 0.38), mode(200, 400, 800, 0.2), mode(100, 250, 400, 0.35), mode(151, 300, 500, 0.3),
			true, true, true, false, false},
		{"worse than round-robin at p90", mode(100, 401, 400, 0.38), mode(200, 400, 800, 0.2), mode(100, 450, 400, 0.35), mode(140, 300, 500, 0.3),
			true, false, true, true, false},
		// From the send kv-nospec looks faster, but its users waited for
		// the backlog it left in the generator: the verdict is on that.
		{"nospec behind the schedule", mode(100, 200, 400, 0.38), mode(200, 400, 800, 0.2), behind(mode(90, 190, 390, 0.35), 500), mode(140, 300, 500, 0.3),
			true, true, true, true, true},
		{"kv behind the schedule", behind(mode(100, 200, 400, 0.38), 300), mode(200, 400, 800, 0.2), mode(100, 250, 400, 0.35), mode(140, 300, 500, 0.3),
			true, false, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{ReachableReuse: 0.4, Modes: map[string]*ModeResult{ModeKV: tt.kv, ModeRoundRobin: tt.rr, ModeKVNoSpec: tt.nospec, ModeApprox: tt.approx}}
			s := r.saturation()
			got := [5]bool{s.ReusePass, s.RoundRobinPass, s.NoSpecPass, s.ApproxPass, s.Pass}
			if want := [5]bool{tt.reuse, tt.rrpass, tt.nsPass, tt.approxPass, tt.pass}; got != want {
				t.Fatalf("reuse/rr/nospec/approx/pass = %v, want %v (%+v)", got, want, s)
			}
			if want := tt.kv.TTFTP90Ms / tt.rr.TTFTP90Ms; s.KVOverRoundRobin.P90 != want {
				t.Errorf("kv/rr p90 %v, want %v", s.KVOverRoundRobin.P90, want)
			}
			if want := tt.kv.TTFTFromArrivalP99Ms / tt.nospec.TTFTFromArrivalP99Ms; s.KVOverNoSpecFromArrival.P99 != want {
				t.Errorf("kv/nospec p99 from arrival %v, want %v", s.KVOverNoSpecFromArrival.P99, want)
			}
			if want := tt.kv.Delayed+tt.nospec.Delayed == 0; s.ScheduleKept != want {
				t.Errorf("schedule kept %v, want %v", s.ScheduleKept, want)
			}
			if want := tt.kv.CachedTokenRatio / 0.4; s.CachedOverReachable[ModeKV] != want {
				t.Errorf("kv cached/reachable %v, want %v", s.CachedOverReachable[ModeKV], want)
			}
		})
	}
	if s := (&Report{Modes: map[string]*ModeResult{ModeRoundRobin: mode(1, 1, 1, 0)}}).saturation(); s != nil {
		t.Errorf("saturation without kv: %+v, want nil", s)
	}
}

// TestSweepStopsOnWhatUsersWait checks the sweep's stop: on round-robin's
// TTFT p90 from arrival, so that a rate where the generator's cap keeps
// its TTFT from the send low still ends the sweep.
func TestSweepStopsOnWhatUsersWait(t *testing.T) {
	sat := func(sent, arrival float64) *Saturation {
		return &Saturation{RoundRobinTTFTP90Ms: sent, RoundRobinTTFTFromArrivalP90Ms: arrival}
	}
	tests := []struct {
		name  string
		s     *Saturation
		limit float64
		want  bool
	}{
		{"kept, below", sat(4000, 4000), 5000, false},
		{"kept, at the limit", sat(5000, 5000), 5000, true},
		{"capped: from the send below, users waited more", sat(3400, 7200), 5000, true},
		{"no limit", sat(9000, 9000), 0, false},
		{"no round-robin", (&Report{Modes: map[string]*ModeResult{ModeKV: {}}}).saturation(), 5000, false},
		{"no kv", nil, 5000, false},
	}
	for _, tt := range tests {
		if got := stopAfter(tt.s, tt.limit); got != tt.want {
			t.Errorf("%s: stopAfter = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestMedianSaturation checks the medians over repeated runs and that the
// verdicts are judged on them, not on any one run.
func TestMedianSaturation(t *testing.T) {
	run := func(kvReach, nsP99, rrP90, approx float64, kept bool) *Saturation {
		s := &Saturation{CachedOverReachable: map[string]float64{ModeKV: kvReach, ModeRoundRobin: 0.1},
			KVOverRoundRobinFromArrival: &Ratios{0.5, 0.6, 0.7}, KVOverRoundRobin: &Ratios{0.5, 0.6, 0.7},
			KVOverNoSpecFromArrival: &Ratios{0.9, 0.95, nsP99}, KVOverNoSpec: &Ratios{0.9, 0.95, nsP99},
			ApproxOverKVP50FromArrival: approx, ApproxOverKVP50: approx,
			RoundRobinTTFTFromArrivalP90Ms: rrP90, RoundRobinTTFTP90Ms: rrP90, ScheduleKept: kept}
		s.judge()
		return s
	}
	tests := []struct {
		name                string
		runs                []*Saturation
		nsP99, rrP90, reach float64
		pass, nsPass, kept  bool
	}{
		// One run of three misses against kv-nospec: the median does not.
		{"one miss of three", []*Saturation{run(0.95, 1.2, 4000, 1.1, true), run(0.93, 0.9, 4600, 1.0, true), run(0.97, 0.8, 5200, 1.2, true)},
			0.9, 4600, 0.95, true, true, true},
		// Two misses of three: the median misses.
		{"two misses of three", []*Saturation{run(0.95, 1.2, 4000, 1.1, true), run(0.93, 1.05, 4600, 1.0, false), run(0.97, 0.8, 5200, 1.2, true)},
			1.05, 4600, 0.95, false, false, false},
		// Even count: the mean of the middle two.
		{"two runs", []*Saturation{run(0.8, 1.1, 4000, 1.1, true), run(1.0, 0.9, 6000, 1.0, true)},
			1.0, 5000, 0.9, true, true, true},
		{"nil runs skipped", []*Saturation{nil, run(0.95, 0.9, 4000, 1.1, true), nil},
			0.9, 4000, 0.95, true, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := medianSaturation(tt.runs)
			if m.KVOverNoSpecFromArrival.P99 != tt.nsP99 || m.KVOverNoSpec.P99 != tt.nsP99 {
				t.Errorf("kv/nospec p99 %v (from the send %v), want %v", m.KVOverNoSpecFromArrival.P99, m.KVOverNoSpec.P99, tt.nsP99)
			}
			if m.RoundRobinTTFTFromArrivalP90Ms != tt.rrP90 || m.KVOverRoundRobinFromArrival.P90 != 0.6 {
				t.Errorf("rr p90 %v, kv/rr p90 %v, want %v and 0.6", m.RoundRobinTTFTFromArrivalP90Ms, m.KVOverRoundRobinFromArrival.P90, tt.rrP90)
			}
			if math.Abs(m.CachedOverReachable[ModeKV]-tt.reach) > 1e-12 || m.CachedOverReachable[ModeRoundRobin] != 0.1 {
				t.Errorf("cached over reachable %v, want kv %v", m.CachedOverReachable, tt.reach)
			}
			if m.Pass != tt.pass || m.NoSpecPass != tt.nsPass || m.ScheduleKept != tt.kept || !m.RoundRobinPass || !m.ApproxPass {
				t.Errorf("pass %v nospec %v kept %v rr %v approx %v, want %v %v %v true true", m.Pass, m.NoSpecPass, m.ScheduleKept, m.RoundRobinPass, m.ApproxPass, tt.pass, tt.nsPass, tt.kept)
			}
		})
	}
	if m := medianSaturation([]*Saturation{nil}); m != nil {
		t.Errorf("median of no figures %+v, want nil", m)
	}
	// A comparison no run made stays unjudged.
	s := run(0.95, 0.9, 4000, 0, true)
	s.KVOverNoSpecFromArrival, s.KVOverNoSpec = nil, nil
	if m := medianSaturation([]*Saturation{s, s}); m.KVOverNoSpecFromArrival != nil || m.NoSpecPass || m.ApproxPass || !m.Pass {
		t.Errorf("median without kv-nospec and approx: %+v, want them unjudged and a pass", m)
	}
}

// TestRunSweepCold sweeps the cold workload, cut small, at two rates and
// checks that each point ran at its time scale and carries the figures.
func TestRunSweepCold(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Workload, cfg.WorkloadRequests, cfg.Seed = WorkloadCold, 40, 7
	cfg.Sample, cfg.TimeScale, cfg.Pods, cfg.BlocksPerPod = 1, 0.1, 3, 4096
	cfg.PrefillPerToken, cfg.DecodePerToken, cfg.MaxTokensCap = time.Microsecond, 100*time.Microsecond, 4
	cfg.Modes = []string{ModeRoundRobin, ModeKV}
	sw, err := RunSweep(context.Background(), cfg, SweepConfig{Rates: []float64{1, 2}, Repeat: 2}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Points) != 2 {
		t.Fatalf("got %d points, want 2", len(sw.Points))
	}
	for i, p := range sw.Points {
		if want := cfg.TimeScale / p.Rate; p.TimeScale != want || p.Report.TimeScale != want {
			t.Errorf("point %d: time scale %v (report %v), want %v", i, p.TimeScale, p.Report.TimeScale, want)
		}
		if p.Report.Workload != WorkloadCold || p.Report.Requests != 40 {
			t.Errorf("point %d: workload %q with %d requests, want cold with 40", i, p.Report.Workload, p.Report.Requests)
		}
		// The sweep's mechanics are under test, not the fleet: a request
		// lost to the loaded machine (under -race) is tolerated, named.
		for _, m := range cfg.Modes {
			if mr := p.Report.Modes[m]; mr.OK < 38 {
				t.Errorf("point %d: %s had %d successes of 40, want at least 38 (errors %v)", i, m, mr.OK, mr.ErrorsByKind)
			}
		}
		if s := p.Report.Saturation; s == nil || s.KVOverRoundRobin == nil || s.KVOverNoSpec != nil {
			t.Errorf("point %d: saturation %+v, want kv/rr and no kv/nospec", i, s)
		}
		// Each rate ran twice, and is judged on the two runs' medians.
		if len(p.Repeats) != 1 || p.Repeats[0].TimeScale != p.TimeScale || p.Median == nil || p.Judged() != p.Median {
			t.Fatalf("point %d: %d repeats, median %+v, want one more run and the median judged", i, len(p.Repeats), p.Median)
		}
		a, b := p.Report.Saturation.KVOverRoundRobinFromArrival.P90, p.Repeats[0].Saturation.KVOverRoundRobinFromArrival.P90
		if got := p.Median.KVOverRoundRobinFromArrival.P90; math.Abs(got-(a+b)/2) > 1e-12 {
			t.Errorf("point %d: median kv/rr p90 %v, want the mean of the two runs' %v and %v", i, got, a, b)
		}
	}
	if r0, r1 := sw.Points[0].RequestsPerS, sw.Points[1].RequestsPerS; !(r1 > 1.9*r0 && r1 < 2.1*r0) {
		t.Errorf("requests/s %v then %v, want twice", r0, r1)
	}
	data, err := json.Marshal(sw)
	if err != nil || !strings.Contains(string(data), `"kv_over_round_robin"`) || !strings.Contains(string(data), `"cached_over_reachable"`) ||
		!strings.Contains(string(data), `"repeats"`) || !strings.Contains(string(data), `"median"`) {
		t.Errorf("sweep JSON %s (%v) lacks the saturation figures", data, err)
	}
	var table strings.Builder
	if err := sw.WriteTable(&table); err != nil || !strings.Contains(table.String(), "x2") || !strings.Contains(table.String(), "kv/reach") ||
		!strings.Contains(table.String(), "median of 2 runs") {
		t.Errorf("WriteTable got %q (%v), want a row per rate", table.String(), err)
	}
	if _, err := RunSweep(context.Background(), cfg, SweepConfig{Rates: []float64{0}}, Options{}); err == nil {
		t.Error("a sweep at rate 0 ran, want an error")
	}
	if _, err := RunSweep(context.Background(), cfg, SweepConfig{Rates: []float64{1}, Repeat: -1}, Options{}); err == nil {
		t.Error("a sweep repeated -1 times ran, want an error")
	}
}
