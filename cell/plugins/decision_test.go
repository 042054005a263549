package plugins

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// fleet is a cell's worth of state for decision tests: an index with pods
// registered in slot order and candidates describing them.
type fleet struct {
	ix     *index.Index
	hasher blockhash.Hasher
	cands  []pipeline.Candidate
}

func newFleet(t testing.TB, pods int) *fleet {
	t.Helper()
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	f := &fleet{ix: ix, hasher: blockhash.DefaultHasher()}
	for i := 0; i < pods; i++ {
		id := fmt.Sprintf("pod-%03d", i)
		s, err := ix.Register(id)
		if err != nil {
			t.Fatal(err)
		}
		f.cands = append(f.cands, pipeline.Candidate{Target: &pipeline.Target{Pod: id, Holder: id, Address: fmt.Sprintf("10.0.%d.%d:8000", i/250, i%250)},
			Slot: s, HasSlot: true, Healthy: true, TotalBlocks: 1000})
	}
	return f
}

func tokens(n int, salt uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = salt*100000 + uint32(i)
	}
	return out
}

// hold makes pod i hold the first blocks of toks.
func (f *fleet) hold(i int, toks []uint32, blocks int) {
	hs := f.hasher.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	f.ix.Store(f.cands[i].Slot, index.TierGPU, hs[:blocks])
}

func (f *fleet) selector(t testing.TB, cfg pipeline.ProfileConfig, sessions *Sessions) *pipeline.Selector {
	t.Helper()
	r := pipeline.NewRegistry()
	Register(r, Deps{Index: f.ix, Hasher: f.hasher, Sessions: sessions})
	p, err := r.Build(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.NewSelector(p, nil)
}

func (f *fleet) decide(t testing.TB, s *pipeline.Selector, req *pipeline.Request, seed uint64) pipeline.Decision {
	t.Helper()
	rc := pipeline.NewContext(req, f.cands, rand.New(rand.NewPCG(seed, 0)))
	d, err := s.Select(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDefaultProfileDecisions(t *testing.T) {
	toks := tokens(64*16, 1)
	req := func() *pipeline.Request { return &pipeline.Request{Model: "m", TokenIDs: toks} }
	tests := []struct {
		name  string
		setup func(f *fleet)
		want  string // pod that must be picked; "" = any of the spread check
	}{
		{"longest prefix wins", func(f *fleet) {
			f.hold(1, toks, 10)
			f.hold(2, toks, 40)
			f.hold(3, toks, 20)
		}, "pod-002"},
		{"load beats a small overlap", func(f *fleet) {
			f.hold(2, toks, 2)
			f.cands[2].ActiveBlocks = 500 // the holder is busy with decode work
		}, ""},
		{"busy pod filtered", func(f *fleet) {
			f.hold(1, toks, 60)
			f.cands[1].ActiveBlocks = 990
			f.hold(2, toks, 30)
		}, "pod-002"},
		{"dead pod filtered", func(f *fleet) {
			f.hold(1, toks, 60)
			f.cands[1].Healthy = false
			f.hold(3, toks, 5)
		}, "pod-003"},
		{"draining pod filtered", func(f *fleet) {
			f.hold(1, toks, 60)
			f.cands[1].Draining = true
			f.hold(0, toks, 5)
		}, "pod-000"},
		{"prefill-only pod not picked for an aggregated request", func(f *fleet) {
			f.hold(1, toks, 60)
			f.cands[1].Role = pipeline.RolePrefill
			f.hold(0, toks, 5)
		}, "pod-000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, 4)
			tt.setup(f)
			s := f.selector(t, DefaultProfile("default", 1, 0, 0.95), nil)
			d := f.decide(t, s, req(), 1)
			got := f.cands[d.Pick()].Pod
			if tt.want != "" && got != tt.want {
				t.Fatalf("picked %s, want %s (order %v scores %v)", got, tt.want, d.Order, d.Scores)
			}
			if tt.want == "" && got == "pod-002" {
				t.Fatalf("picked the loaded holder pod-002 (scores %v)", d.Scores)
			}
		})
	}
}

// TestLoadSpreadsWhenOverlapEqual checks that with no cache anywhere the
// default profile spreads requests (random tie-breaks and load feedback),
// instead of sending everything to one pod.
func TestLoadSpreadsWhenOverlapEqual(t *testing.T) {
	f := newFleet(t, 8)
	s := f.selector(t, DefaultProfile("default", 1, 0, 0.95), nil)
	counts := map[string]int{}
	for i := 0; i < 400; i++ {
		d := f.decide(t, s, &pipeline.Request{Model: "m", TokenIDs: tokens(256, uint32(i+10))}, uint64(i))
		c := &f.cands[d.Pick()]
		counts[c.Pod]++
		c.ActiveBlocks += 16 // the routed request occupies blocks
	}
	for pod, n := range counts {
		if n < 30 || n > 70 {
			t.Fatalf("pod %s got %d of 400 requests; counts %v", pod, n, counts)
		}
	}
	if len(counts) != 8 {
		t.Fatalf("only %d pods used: %v", len(counts), counts)
	}
}

func TestFailOpen(t *testing.T) {
	f := newFleet(t, 3)
	for i := range f.cands {
		f.cands[i].ActiveBlocks = 999 // every pod over the busy threshold
	}
	f.cands[2].ActiveBlocks = 995
	s := f.selector(t, DefaultProfile("default", 1, 0, 0.5), nil)
	d := f.decide(t, s, &pipeline.Request{Model: "m", TokenIDs: tokens(64, 3)}, 1)
	if !d.FailedOpen {
		t.Fatal("decision did not fail open")
	}
	if got := f.cands[d.Pick()].Pod; got != "pod-002" {
		t.Fatalf("fail-open picked %s, want the least loaded pod-002", got)
	}
	f.cands[0].Healthy, f.cands[1].Healthy, f.cands[2].Healthy = false, false, false
	rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: tokens(64, 3)}, f.cands, rand.New(rand.NewPCG(1, 1)))
	if _, err := s.Select(context.Background(), rc); err == nil {
		t.Fatal("no healthy pod, but Select did not fail")
	}
}

func TestPickers(t *testing.T) {
	params := func(s string) pipeline.Params { p, _ := pipeline.ParamsOf(s); return p }
	f := newFleet(t, 5)
	toks := tokens(128, 4)
	f.hold(3, toks, 8)

	t.Run("sticky session", func(t *testing.T) {
		sess := NewSessions(time.Minute, 100, nil)
		sess.Record("alice", "pod-001")
		cfg := pipeline.ProfileConfig{Name: "sticky", Prepare: []pipeline.PluginSpec{{Type: "session"}},
			Filter: []pipeline.PluginSpec{{Type: "healthy"}}, Pick: pipeline.PluginSpec{Type: "sticky-session"}}
		s := f.selector(t, cfg, sess)
		req := &pipeline.Request{Model: "m", Header: map[string][]string{"X-Session-Id": {"alice"}}}
		if got := f.cands[f.decide(t, s, req, 1).Pick()].Pod; got != "pod-001" {
			t.Fatalf("sticky picked %s, want pod-001", got)
		}
	})
	t.Run("consistent hash is stable and bounded", func(t *testing.T) {
		cfg := pipeline.ProfileConfig{Name: "ch", Prepare: []pipeline.PluginSpec{{Type: "tokens"}, {Type: "block-hashes"}, {Type: "hash-key"}},
			Pick: pipeline.PluginSpec{Type: "consistent-hash", Params: params("epsilon: 0.1")}}
		s := f.selector(t, cfg, nil)
		req := &pipeline.Request{Model: "m", TokenIDs: toks}
		first := f.decide(t, s, req, 1).Pick()
		for seed := uint64(2); seed < 10; seed++ {
			if got := f.decide(t, s, req, seed).Pick(); got != first {
				t.Fatalf("same prefix went to %d then %d", first, got)
			}
		}
		f.cands[first].ActiveRequests = 100 // overloaded: must move
		if got := f.decide(t, s, req, 1).Pick(); got == first {
			t.Fatal("consistent hash kept an overloaded pod")
		}
		f.cands[first].ActiveRequests = 0
	})
	t.Run("round robin rotates", func(t *testing.T) {
		cfg := pipeline.ProfileConfig{Name: "rr", Pick: pipeline.PluginSpec{Type: "round-robin-pick"}}
		s := f.selector(t, cfg, nil)
		seen := map[int]bool{}
		for i := 0; i < 5; i++ {
			seen[f.decide(t, s, &pipeline.Request{Model: "m"}, 1).Pick()] = true
		}
		if len(seen) != 5 {
			t.Fatalf("round robin visited %d of 5 pods", len(seen))
		}
	})
	t.Run("softmax samples by cost", func(t *testing.T) {
		s := f.selector(t, DefaultProfile("soft", 1, 0.5, 1), nil)
		counts := map[string]int{}
		for i := 0; i < 300; i++ {
			counts[f.cands[f.decide(t, s, &pipeline.Request{Model: "m", TokenIDs: toks}, uint64(i)).Pick()].Pod]++
		}
		pods := make([]string, 0, len(counts))
		for p := range counts {
			pods = append(pods, p)
		}
		sort.Slice(pods, func(i, j int) bool { return counts[pods[i]] > counts[pods[j]] })
		if pods[0] != "pod-003" || len(counts) < 2 {
			t.Fatalf("softmax counts %v: want the holder most often, others sometimes", counts)
		}
	})
	t.Run("per-request temperature override", func(t *testing.T) {
		s := f.selector(t, DefaultProfile("soft", 1, 5, 1), nil)
		zero := 0.0
		for i := 0; i < 50; i++ {
			req := &pipeline.Request{Model: "m", TokenIDs: toks, Overrides: pipeline.Overrides{Temperature: &zero}}
			if got := f.cands[f.decide(t, s, req, uint64(i)).Pick()].Pod; got != "pod-003" {
				t.Fatalf("temperature 0 override picked %s", got)
			}
		}
	})
}

func TestDisaggregatedWorkflow(t *testing.T) {
	f := newFleet(t, 4)
	f.cands[0].Role, f.cands[1].Role = pipeline.RolePrefill, pipeline.RolePrefill
	f.cands[2].Role, f.cands[3].Role = pipeline.RoleDecode, pipeline.RoleDecode
	f.cands[1].Address, f.cands[3].Address = "10.9.9.9:8000", "10.9.9.9:8001" // same host
	toks := tokens(256, 5)
	f.hold(1, toks, 16)
	pre := DefaultProfile("prefill", 1, 0, 1)
	pre.Role = "prefill"
	dec := pipeline.ProfileConfig{Name: "decode", Role: "decode",
		Filter: []pipeline.PluginSpec{{Type: "healthy"}, {Type: "role"}},
		Score:  []pipeline.PluginSpec{{Type: "locality", Weight: 1}}, Pick: pipeline.PluginSpec{Type: "max-score"}}
	w, err := pipeline.NewDisaggregatedWorkflow(f.selector(t, pre, nil), f.selector(t, dec, nil))
	if err != nil {
		t.Fatal(err)
	}
	rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: toks}, f.cands, rand.New(rand.NewPCG(1, 1)))
	plan, err := w.Plan(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.cands[plan.Prefill.Pick()].Pod; got != "pod-001" {
		t.Fatalf("prefill picked %s, want the cache holder pod-001", got)
	}
	if got := f.cands[plan.Decode.Pick()].Pod; got != "pod-003" {
		t.Fatalf("decode picked %s, want pod-003 on the prefill pod's host", got)
	}
}

// decisionBench is the setting of the decision benchmarks: a cell of 256
// pods whose index holds 1M blocks, 64 requests of 64 blocks each with its
// prefix held at a few depths by a few pods, random loads, and the default
// profile.
func decisionBench(b *testing.B) (*fleet, [][]uint32, *pipeline.Selector) {
	f := newFleet(b, 256)
	rng := rand.New(rand.NewPCG(7, 7))
	var reqs [][]uint32
	for i := 0; i < 64; i++ {
		reqs = append(reqs, tokens(64*16, uint32(1000+i)))
	}
	for i := 0; i < 4096; i++ { // background: 1M blocks over all pods
		f.hold(rng.IntN(256), tokens(256*16, uint32(5000+i)), 256)
	}
	for i, toks := range reqs { // each request's prefix held at a few depths
		for h := 0; h < 4; h++ {
			f.hold(rng.IntN(256), toks, 1+(i*7+h*13)%64)
		}
	}
	for i := range f.cands {
		f.cands[i].ActiveBlocks = rng.IntN(800)
	}
	return f, reqs, f.selector(b, DefaultProfile("default", 1, 0, 0.95), nil)
}

// BenchmarkDecision times the default profile's decision, Prepare from
// token ids through Pick, for a 64-block request in a cell of 256 pods
// whose index holds 1M blocks. It reports the p99 of single decisions.
func BenchmarkDecision(b *testing.B) {
	f, reqs, s := decisionBench(b)
	rc := pipeline.NewContext(nil, f.cands, rand.New(rand.NewPCG(1, 2)))
	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := pipeline.Request{Model: "m", TokenIDs: reqs[i%len(reqs)]}
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

// BenchmarkDecisionParts splits the decision of BenchmarkDecision into its
// halves: prepare (hashing and the index match) and choose (filter, score
// and pick over the 256 pods), to show where an optimisation lands.
func BenchmarkDecisionParts(b *testing.B) {
	f, reqs, s := decisionBench(b)
	rc := pipeline.NewContext(nil, f.cands, rand.New(rand.NewPCG(1, 2)))
	b.Run("prepare", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			req := pipeline.Request{Model: "m", TokenIDs: reqs[i%len(reqs)]}
			rc.Reset(&req, f.cands)
			if err := s.Prepare(context.Background(), rc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("choose", func(b *testing.B) {
		req := pipeline.Request{Model: "m", TokenIDs: reqs[3]}
		rc.Reset(&req, f.cands)
		if err := s.Prepare(context.Background(), rc); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if _, err := s.Choose(rc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestSpeculativeWeight checks kv-cost's speculative_weight: pod 0 holds 10
// blocks exactly and 20 more speculatively (a request was just routed
// there), pod 1 holds 18 exactly, pod 2 is an approximate pod (no events)
// holding approx blocks, which count fully whatever the weight.
func TestSpeculativeWeight(t *testing.T) {
	toks := tokens(64*16, 9)
	tests := []struct {
		weight float64
		approx int
		want   string
	}{
		{1, 24, "pod-000"},   // 30 against 18 and 24
		{0.5, 0, "pod-000"},  // 10 + 20/2 = 20 against 18
		{0.25, 0, "pod-001"}, // 15 against 18
		{0, 0, "pod-001"},    // 10 against 18
		{0.5, 24, "pod-002"}, // 20 against 24 approximate blocks
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.weight, "/", tt.approx), func(t *testing.T) {
			f := newFleet(t, 3)
			l, err := index.NewLearner(f.ix, index.DefaultLearnConfig())
			if err != nil {
				t.Fatal(err)
			}
			hs := f.hasher.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
			f.hold(0, toks, 10)
			l.Speculate(f.cands[0].Slot, hs[:30], time.Now())
			f.hold(1, toks, 18)
			if tt.approx > 0 {
				l.SetApproximate(f.cands[2].Slot, true, 0)
				l.Touch(f.cands[2].Slot, hs[:tt.approx], time.Now())
			}
			p := WithSpeculativeWeight(DefaultProfile("default", 1, 0, 0.95), tt.weight)
			d := f.decide(t, f.selector(t, p, nil), &pipeline.Request{Model: "m", TokenIDs: toks}, 1)
			if got := f.cands[d.Order[0]].Pod; got != tt.want {
				t.Fatalf("weight %v picked %s, want %s", tt.weight, got, tt.want)
			}
		})
	}
	r := pipeline.NewRegistry()
	Register(r, Deps{Index: newFleet(t, 1).ix, Hasher: blockhash.DefaultHasher()})
	if _, err := r.Build(WithSpeculativeWeight(DefaultProfile("x", 1, 0, 0.95), 2)); err == nil || !strings.Contains(err.Error(), "speculative_weight") {
		t.Fatalf("a profile with speculative_weight 2: got %v, want an error naming speculative_weight", err)
	}
}
