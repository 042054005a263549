package plugins

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/enginemetrics"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// fixedSource is an EngineSource serving one view.
type fixedSource struct{ v enginemetrics.View }

func (s fixedSource) View() enginemetrics.View { return s.v }

var engineNow = time.Unix(5000, 0)

// engineView builds a view at engineNow from pod snapshots; a snapshot
// with At zero is given a fresh one unless stale is set.
func engineView(pods map[string]*enginemetrics.Snapshot) enginemetrics.View {
	for _, s := range pods {
		if s.At.IsZero() {
			s.At = engineNow.Add(-100 * time.Millisecond)
		}
	}
	return enginemetrics.NewView(pods, engineNow, 2*time.Second)
}

func staleSnap(s enginemetrics.Sample) *enginemetrics.Snapshot {
	return &enginemetrics.Snapshot{Sample: s, At: engineNow.Add(-10 * time.Second), Err: "connection refused", Failures: 40}
}

func (f *fleet) engineSelector(t testing.TB, cfg pipeline.ProfileConfig, v enginemetrics.View) *pipeline.Selector {
	t.Helper()
	r := pipeline.NewRegistry()
	Register(r, Deps{Index: f.ix, Hasher: f.hasher, Engines: fixedSource{v}})
	p, err := r.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.NewSelector(p, nil)
}

// TestEngineLoadDecisions checks the default profile with the engine load
// plug-ins: traffic the router did not see moves requests away from a
// pod, and a stale scrape falls back to the router's own estimate.
func TestEngineLoadDecisions(t *testing.T) {
	toks := tokens(64*16, 1)
	usage := func(u, running, waiting float64) *enginemetrics.Snapshot {
		return &enginemetrics.Snapshot{Sample: enginemetrics.Sample{HasKVUsage: true, KVUsage: u, HasQueue: true, Running: running, Waiting: waiting}}
	}
	tests := []struct {
		name  string
		req   pipeline.Request
		setup func(f *fleet) map[string]*enginemetrics.Snapshot
		want  string
	}{
		{"no metrics: longest prefix wins", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			f.hold(1, toks, 30)
			return nil
		}, "pod-001"},
		{"bypass load on the holder moves the request", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			f.hold(1, toks, 30)
			f.hold(2, toks, 20)
			return map[string]*enginemetrics.Snapshot{"pod-001": usage(0.5, 10, 10), "pod-002": usage(0.01, 1, 0)}
		}, "pod-002"},
		{"stale scrape falls back to the router's estimate", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			f.hold(1, toks, 30)
			f.hold(2, toks, 20)
			return map[string]*enginemetrics.Snapshot{"pod-001": staleSnap(usage(0.9, 10, 10).Sample)}
		}, "pod-001"},
		{"load the router routed itself is not charged twice", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			// At the scrape the router had 400 blocks on pod-001 and the
			// engine held them; they have finished since (active 0 now).
			f.hold(1, toks, 30)
			f.hold(2, toks, 20)
			s := usage(0.4, 4, 0)
			s.RouterRequests, s.RouterBlocks = 4, 400
			return map[string]*enginemetrics.Snapshot{"pod-001": s}
		}, "pod-001"},
		{"engine below the router's count changes nothing", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			f.hold(1, toks, 30)
			f.hold(2, toks, 25)
			f.cands[1].ActiveBlocks = 3
			return map[string]*enginemetrics.Snapshot{"pod-001": usage(0, 0, 0)}
		}, "pod-001"},
		{"engine capacity from cache_config when kv_blocks unset", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			for i := range f.cands {
				f.cands[i].TotalBlocks = 0
			}
			f.hold(1, toks, 30)
			f.hold(3, toks, 25)
			s := usage(0.5, 4, 0)
			s.CapacityTokens = 1000 * 16
			return map[string]*enginemetrics.Snapshot{"pod-001": s}
		}, "pod-003"},
		{"queue without usage counts requests", pipeline.Request{Model: "m", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			f.hold(1, toks, 30)
			f.hold(3, toks, 25)
			f.cands[1].ActiveRequests, f.cands[1].ActiveBlocks = 1, 40
			return map[string]*enginemetrics.Snapshot{"pod-001": {Sample: enginemetrics.Sample{HasQueue: true, Running: 4, Waiting: 4}}}
		}, "pod-003"},
		{"lora adapter loaded wins a near tie", pipeline.Request{Model: "sql-lora", TokenIDs: toks}, func(f *fleet) map[string]*enginemetrics.Snapshot {
			return map[string]*enginemetrics.Snapshot{
				"pod-002": {Sample: enginemetrics.Sample{HasLoRA: true, RunningLoRA: []string{"sql-lora"}, MaxLoRA: 2}},
				"pod-003": {Sample: enginemetrics.Sample{HasLoRA: true, RunningLoRA: []string{"chat"}, MaxLoRA: 2}},
			}
		}, "pod-002"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, 4)
			v := engineView(tt.setup(f))
			prof := WithEngineLoad(DefaultProfile("default", 1, 0, 0.95), 16)
			s := f.engineSelector(t, prof, v)
			for seed := range uint64(5) {
				req := tt.req
				d := f.decide(t, s, &req, seed)
				if got := f.cands[d.Pick()].Pod; got != tt.want {
					t.Fatalf("seed %d: picked %s, want %s (order %v scores %v)", seed, got, tt.want, d.Order, d.Scores)
				}
			}
		})
	}
}

// TestEngineCostMatchesReference checks on random fleets that kv-cost plus
// engine-active-blocks is exactly -(w*prefill + active + unseen), unseen
// being the engine's estimate minus the router's count at the scrape
// (never negative), computed the naive way; -(w*prefill + active) for pods
// without a fresh snapshot.
func TestEngineCostMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	toks := tokens(32*16, 2)
	for round := range 50 {
		f := newFleet(t, 16)
		pods := map[string]*enginemetrics.Snapshot{}
		depth := map[string]int{}
		for i := range f.cands {
			c := &f.cands[i]
			c.ActiveRequests = rng.IntN(10)
			c.ActiveBlocks = c.ActiveRequests * rng.IntN(60)
			if d := rng.IntN(32); d > 0 {
				f.hold(i, toks, d)
				depth[c.Pod] = d
			}
			if rng.IntN(4) == 0 {
				continue // never scraped
			}
			s := &enginemetrics.Snapshot{Sample: enginemetrics.Sample{HasKVUsage: rng.IntN(3) > 0, KVUsage: rng.Float64(), HasQueue: true,
				Running: float64(rng.IntN(8)), Waiting: float64(rng.IntN(8))}, RouterRequests: rng.IntN(6), RouterBlocks: rng.IntN(300)}
			if rng.IntN(5) == 0 {
				s.At = engineNow.Add(-time.Minute)
			}
			pods[c.Pod] = s
		}
		v := engineView(pods)
		prof := WithEngineLoad(DefaultProfile("default", 2, 0, 1), 0)
		s := f.engineSelector(t, prof, v)
		rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: toks}, f.cands, rand.New(rand.NewPCG(1, 1)))
		d, err := s.Select(context.Background(), rc)
		if err != nil {
			t.Fatal(err)
		}
		for k, i := range d.Order {
			c := f.cands[i]
			decode := float64(c.ActiveBlocks)
			if snap := pods[c.Pod]; snap != nil && engineNow.Sub(snap.At) <= 2*time.Second {
				unseen := 0.0
				if snap.HasKVUsage {
					eng := snap.KVUsage * float64(c.TotalBlocks)
					if snap.Running > 0 {
						eng = eng * (snap.Running + snap.Waiting) / snap.Running
					}
					unseen = eng - float64(snap.RouterBlocks)
				} else {
					per := 0.0
					if c.ActiveRequests > 0 {
						per = float64(c.ActiveBlocks) / float64(c.ActiveRequests)
					} else if snap.RouterRequests > 0 {
						per = float64(snap.RouterBlocks) / float64(snap.RouterRequests)
					}
					unseen = (snap.Running + snap.Waiting - float64(snap.RouterRequests)) * per
				}
				decode += math.Max(0, unseen)
			}
			want := -(2*float64(32-depth[c.Pod]) + decode)
			if got := d.Scores[k]; math.Abs(got-want) > 1e-9 {
				t.Fatalf("round %d %s: score %v, want %v", round, c.Pod, got, want)
			}
		}
	}
}

// TestEngineScorers checks the normalised engine scorers' values.
func TestEngineScorers(t *testing.T) {
	f := newFleet(t, 4)
	f.cands[0].ActiveRequests, f.cands[0].ActiveBlocks = 2, 500
	f.cands[3].ActiveRequests = 9
	v := engineView(map[string]*enginemetrics.Snapshot{
		"pod-000": {Sample: enginemetrics.Sample{HasKVUsage: true, KVUsage: 0.25, HasQueue: true, Running: 1, Waiting: 0}},
		"pod-001": {Sample: enginemetrics.Sample{HasKVUsage: true, KVUsage: 0.75, HasQueue: true, Running: 4, Waiting: 5,
			HasLoRA: true, WaitingLoRA: []string{"a"}, MaxLoRA: 1}},
		"pod-002": {Sample: enginemetrics.Sample{HasLoRA: true, RunningLoRA: []string{"b"}, MaxLoRA: 4}},
		"pod-003": staleSnap(enginemetrics.Sample{HasKVUsage: true, KVUsage: 0.1, HasLoRA: true, RunningLoRA: []string{"a"}}),
	})
	tests := []struct {
		name  string
		score pipeline.PluginSpec
		model string
		want  []float64
	}{
		// pod-000 fresh 0.25; pod-001 0.75; pod-002 no usage: router 0/1000;
		// pod-003 stale: router 0/1000.
		{"kv-usage", pipeline.PluginSpec{Type: "kv-usage", Weight: 1}, "m", []float64{0.75, 0.25, 1, 1}},
		// requests: 2 + max(0, 1-0) = 3, 0 + 9 = 9, 0 (no queue), 9 (stale: router).
		{"queue-depth", pipeline.PluginSpec{Type: "queue-depth", Weight: 1}, "m", []float64{6.0 / 9, 0, 1, 0}},
		{"queue-depth waiting only", pipeline.PluginSpec{Type: "queue-depth", Weight: 1, Params: mustParams(t, "waiting_only: true")}, "m",
			[]float64{1, 4.0 / 9, 1, 0}}, // waiting 0, 5, router 0, stale: router 9
		// a: waiting on pod-001; pod-002 has a free slot; pod-003 stale.
		{"lora-affinity", pipeline.PluginSpec{Type: "lora-affinity", Weight: 1}, "a", []float64{0, 0.75, 0.5, 0}},
		{"lora-affinity, nobody has it", pipeline.PluginSpec{Type: "lora-affinity", Weight: 1}, "zzz", []float64{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prof := pipeline.ProfileConfig{Name: "p", Prepare: []pipeline.PluginSpec{{Type: "engine-load"}},
				Filter: []pipeline.PluginSpec{{Type: "healthy"}}, Score: []pipeline.PluginSpec{tt.score}, Pick: pipeline.PluginSpec{Type: "max-score"}}
			s := f.engineSelector(t, prof, v)
			d := f.decide(t, s, &pipeline.Request{Model: tt.model}, 1)
			got := make([]float64, len(f.cands))
			for k, i := range d.Order {
				got[i] = d.Scores[k]
			}
			for i := range got {
				if math.Abs(got[i]-tt.want[i]) > 1e-9 {
					t.Fatalf("scores %v, want %v", got, tt.want)
				}
			}
		})
	}
}

func mustParams(t testing.TB, s string) pipeline.Params {
	t.Helper()
	p, err := pipeline.ParamsOf(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEngineScorersNeedThePreparer checks that a profile that weighs an
// engine scorer without the engine-load preparer fails validation, naming
// the plug-in and the slot.
func TestEngineScorersNeedThePreparer(t *testing.T) {
	f := newFleet(t, 1)
	for _, typ := range []string{"engine-active-blocks", "kv-usage", "queue-depth", "lora-affinity"} {
		r := pipeline.NewRegistry()
		Register(r, Deps{Index: f.ix, Hasher: f.hasher})
		_, err := r.Build(pipeline.ProfileConfig{Name: "p", Score: []pipeline.PluginSpec{{Type: typ, Weight: 1}}, Pick: pipeline.PluginSpec{Type: "max-score"}})
		var ve *pipeline.ValidationError
		if !errors.As(err, &ve) || ve.Plugin != typ || !strings.HasPrefix(ve.Slot, "engine-load(") {
			t.Errorf("%s without engine-load: err = %v, want a ValidationError naming it and slot engine-load", typ, err)
		}
	}
	// WithEngineLoad is idempotent.
	p := WithEngineLoad(WithEngineLoad(DefaultProfile("d", 1, 0, 0.95), 16), 16)
	if len(p.Prepare) != 4 || len(p.Score) != 3 {
		t.Fatalf("WithEngineLoad twice: prepare %v score %v", p.Prepare, p.Score)
	}
}

// BenchmarkDecisionEngineLoad is BenchmarkDecision with the engine load
// plug-ins on and a fresh snapshot for every one of the 256 pods.
func BenchmarkDecisionEngineLoad(b *testing.B) {
	f, reqs, _ := decisionBench(b)
	pods := map[string]*enginemetrics.Snapshot{}
	for i, c := range f.cands {
		pods[c.Pod] = &enginemetrics.Snapshot{Sample: enginemetrics.Sample{HasKVUsage: true, KVUsage: float64(i%10) / 10, HasQueue: true, Running: 4, Waiting: float64(i % 3),
			HasLoRA: true, RunningLoRA: []string{"a"}}}
	}
	s := f.engineSelector(b, WithEngineLoad(DefaultProfile("default", 1, 0, 0.95), 16), engineView(pods))
	rc := pipeline.NewContext(nil, f.cands, rand.New(rand.NewPCG(1, 2)))
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := pipeline.Request{Model: "a", TokenIDs: reqs[i%len(reqs)]}
		start := time.Now()
		rc.Reset(&req, f.cands)
		if _, err := s.Select(context.Background(), rc); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}
