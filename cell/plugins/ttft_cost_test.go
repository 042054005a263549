package plugins

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// testEngine is the engine model of the ttft-cost tests: 16-token blocks
// at 25µs a token (0.4 ms a block), 16 output tokens at 2 ms (32 ms of
// decode a request), two requests running at once.
var testEngine = TTFTCost{PrefillPerTokenUs: 25, DecodePerTokenMs: 2, DecodeTokens: 16, MaxRunning: 2, SpeculativeWeight: 1}

// ttftProfile is the default profile with the ttft cost of e.
func ttftProfile(t testing.TB, e TTFTCost) pipeline.ProfileConfig {
	t.Helper()
	p, err := WithTTFTCost(DefaultProfile("default", 1, 0, 0.95), e, blockhash.DefaultBlockSize)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestTTFTCostDecisions checks the trade the cost makes: a pod holding
// 60 of a request's 64 blocks (25.6 ms of prefill on a miss, 1.6 ms on
// the hit) against idle pods, as its queue grows. With two servers, 32 ms
// of decode a request and W the holder's remaining work, its wait is W/3
// with two requests in flight and 7W/18 with three.
func TestTTFTCostDecisions(t *testing.T) {
	toks := tokens(64*16, 3)
	tests := []struct {
		name             string
		requests, blocks int // the holder's requests in flight and pending prefill blocks
		want             string
	}{
		{"idle holder wins", 0, 0, "pod-001"},
		{"holder with a free server wins", 1, 64, "pod-001"},
		// R=2, W=64: wait 21.3 ms + 1.6 < 25.6.
		{"queue shorter than the prefill saved", 2, 0, "pod-001"},
		// R=2, W=64+10*0.4=68: wait 22.7 ms + 1.6 < 25.6.
		{"queue with pending prefill still shorter", 2, 10, "pod-001"},
		// R=3, W=96: wait 37.3 ms > 24 ms saved.
		{"queue longer than the prefill saved", 3, 0, ""},
		// R=2, W=64+18*0.4=71.2: wait 23.7 + 1.6 = 25.3 < 25.6.
		{"close call stays", 2, 18, "pod-001"},
		// R=2, W=64+24*0.4=73.6: wait 24.5 + 1.6 = 26.1 > 25.6.
		{"close call moves", 2, 24, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, 4)
			f.hold(1, toks, 60)
			f.cands[1].ActiveRequests, f.cands[1].PrefillBlocks = tt.requests, tt.blocks
			s := f.selector(t, ttftProfile(t, testEngine), nil)
			d := f.decide(t, s, &pipeline.Request{Model: "m", TokenIDs: toks}, 1)
			got := f.cands[d.Pick()].Pod
			if tt.want != "" && got != tt.want {
				t.Fatalf("picked %s, want %s (scores %v)", got, tt.want, d.Scores)
			}
			if tt.want == "" && got == "pod-001" {
				t.Fatalf("picked the saturated holder (scores %v)", d.Scores)
			}
		})
	}
}

// TestTTFTCostQueueWait checks the wait formula against a discrete
// simulation of the model it stands for: MaxRunning servers, one FIFO
// queue, R requests in flight whose remaining work is drawn at random
// with the same total W. The formula uses only R and W, so it cannot be
// exact; it must be within a factor of the mean simulated start over many
// draws, and exactly 0 while a server is free.
func TestTTFTCostQueueWait(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, servers := range []int{1, 2, 4, 8} {
		for _, requests := range []int{0, 1, servers - 1, servers, servers + 1, 2 * servers, 5 * servers} {
			if requests < 0 {
				continue
			}
			e := testEngine
			e.MaxRunning = servers
			pending := 40 * requests // blocks
			got := e.queueWait(requests, pending, 0.4)
			if requests < servers {
				if got != 0 {
					t.Fatalf("S=%d R=%d: wait %v with a free server, want 0", servers, requests, got)
				}
				continue
			}
			work := float64(pending)*0.4 + float64(requests)*e.DecodeTokens*e.DecodePerTokenMs
			sim := 0.0
			const draws = 400
			for n := 0; n < draws; n++ {
				sim += simulatedStart(rng, servers, requests, work)
			}
			sim /= draws
			if ratio := got / sim; ratio < 0.5 || ratio > 2 {
				t.Errorf("S=%d R=%d: formula %.1f ms, simulated %.1f ms (ratio %.2f)", servers, requests, got, sim, ratio)
			}
		}
	}
}

// simulatedStart draws R requests' remaining work (summing to work, the
// running ones partly done), runs them FIFO on servers and returns when a
// server frees for a new request.
func simulatedStart(rng *rand.Rand, servers, requests int, work float64) float64 {
	service := make([]float64, requests)
	sum := 0.0
	for i := range service {
		service[i] = rng.Float64() + 0.05
		sum += service[i]
	}
	free := make([]float64, servers)
	for i := range service {
		k := 0
		for j := range free {
			if free[j] < free[k] {
				k = j
			}
		}
		free[k] += service[i] * work / sum
	}
	start := math.Inf(1)
	for _, f := range free {
		start = min(start, f)
	}
	return start
}

// TestTTFTCostBurst routes a burst of one prefix, each decision counted
// as the cell counts it (the pick's load grows, its blocks turn
// speculative), and checks where it goes.
func TestTTFTCostBurst(t *testing.T) {
	toks := tokens(64*16, 4)
	run := func(t *testing.T, exact bool) map[string]int {
		f := newFleet(t, 4)
		l, err := index.NewLearner(f.ix, index.DefaultLearnConfig())
		if err != nil {
			t.Fatal(err)
		}
		hs := f.hasher.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
		if exact {
			f.hold(0, toks, 64) // the prefix is cached on pod 0
		}
		s := f.selector(t, ttftProfile(t, testEngine), nil)
		got := map[string]int{}
		for n := 0; n < 16; n++ {
			d := f.decide(t, s, &pipeline.Request{Model: "m", TokenIDs: toks}, uint64(n))
			c := &f.cands[d.Pick()]
			got[c.Pod]++
			held := 0
			if exact && c.Pod == "pod-000" {
				held = 63 // the engine recomputes the last block
			}
			c.ActiveRequests++
			c.PrefillBlocks += 64 - held
			l.Speculate(c.Slot, hs, time.Now())
		}
		return got
	}
	t.Run("speculative holder takes the burst until it saturates", func(t *testing.T) {
		// Nothing is cached yet: the first pick's blocks are speculative.
		// The next request joins it on its free server (wait 0, prefix
		// counted); the third would wait 2m/3 = 38.4 ms (m = 32 ms of
		// decode + 64 blocks of prefill each) against 25.6 ms of prefill
		// on an idle pod, so it moves; the burst ends up even.
		got := run(t, false)
		for pod, n := range got {
			if n > 5 {
				t.Fatalf("%s took %d of 16 requests (%v)", pod, n, got)
			}
		}
		if len(got) != 4 {
			t.Fatalf("the burst went to %d pods, want all 4 (%v)", len(got), got)
		}
	})
	t.Run("exact holder takes the burst until it saturates", func(t *testing.T) {
		got := run(t, true)
		// The holder takes requests while its wait stays under the 25.6 ms
		// a hit saves: with R in flight, m = 32.4 ms each (decode and one
		// block to recompute), wait(2) = 2m/3 = 21.6 ms, wait(3) = 7m/6 =
		// 37.8 ms: R = 0, 1 and 2 join it, R = 3 does not; then the others
		// (idle, then loaded) share the rest.
		if got["pod-000"] < 3 {
			t.Fatalf("the holder took %d requests of the burst, want at least 3 (%v)", got["pod-000"], got)
		}
		if got["pod-000"] == 16 {
			t.Fatalf("the holder took the whole burst (%v)", got)
		}
		for pod, n := range got {
			if pod != "pod-000" && n > got["pod-000"]+2 {
				t.Fatalf("%s took %d, more than the holder's %d (%v)", pod, n, got["pod-000"], got)
			}
		}
	})
}

// TestTTFTCostSpeculativeWeight checks what a speculative block counts
// for: pod 0 holds 10 blocks exactly and 50 more speculatively, pod 1
// holds 30 exactly, both idle. At weight w pod 0 holds 10 + 50w.
func TestTTFTCostSpeculativeWeight(t *testing.T) {
	toks := tokens(64*16, 6)
	for _, tt := range []struct {
		weight float64
		want   string
	}{{1, "pod-000"}, {0.5, "pod-000"}, {0.25, "pod-001"}, {0, "pod-001"}} {
		t.Run(fmt.Sprint(tt.weight), func(t *testing.T) {
			f := newFleet(t, 2)
			l, err := index.NewLearner(f.ix, index.DefaultLearnConfig())
			if err != nil {
				t.Fatal(err)
			}
			hs := f.hasher.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
			f.hold(0, toks, 10)
			l.Speculate(f.cands[0].Slot, hs[:60], time.Now())
			f.hold(1, toks, 30)
			e := testEngine
			e.SpeculativeWeight = tt.weight
			d := f.decide(t, f.selector(t, ttftProfile(t, e), nil), &pipeline.Request{Model: "m", TokenIDs: toks}, 1)
			if got := f.cands[d.Pick()].Pod; got != tt.want {
				t.Fatalf("weight %v: picked %s, want %s (scores %v)", tt.weight, got, tt.want, d.Scores)
			}
		})
	}
}

// TestTTFTCostMatchesReference sets the scorer's output against a naive
// computation of the same model over random fleets: per pod, the depth
// the test stored (exact and speculative), the wait formula written out,
// the prefill of the rest.
func TestTTFTCostMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 11))
	for round := 0; round < 50; round++ {
		f := newFleet(t, 8)
		l, err := index.NewLearner(f.ix, index.DefaultLearnConfig())
		if err != nil {
			t.Fatal(err)
		}
		toks := tokens(32*16, uint32(100+round))
		hs := f.hasher.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
		exact := make([]int, 8)
		spec := make([]int, 8)
		for i := range f.cands {
			exact[i] = rng.IntN(33)
			if exact[i] > 0 {
				f.hold(i, toks, exact[i])
			}
			if rng.IntN(3) == 0 {
				spec[i] = exact[i] + rng.IntN(33-exact[i])
				if spec[i] > exact[i] {
					l.Speculate(f.cands[i].Slot, hs[:spec[i]], time.Now())
				}
			}
			f.cands[i].ActiveRequests = rng.IntN(6)
			f.cands[i].PrefillBlocks = rng.IntN(100) * min(1, f.cands[i].ActiveRequests)
			f.cands[i].ActiveBlocks = rng.IntN(900) * min(1, f.cands[i].ActiveRequests)
		}
		e := testEngine
		e.SpeculativeWeight = float64(rng.IntN(3)) / 2
		s := f.selector(t, ttftProfile(t, e), nil)
		d := f.decide(t, s, &pipeline.Request{Model: "m", TokenIDs: toks}, 1)
		for k, i := range d.Order {
			c := f.cands[i]
			r := float64(c.ActiveRequests)
			wait := 0.0
			if c.ActiveRequests >= e.MaxRunning {
				mean := (float64(c.PrefillBlocks)*0.4 + r*32) / r
				servers := float64(e.MaxRunning)
				wait = mean*2/(servers+1) + mean*(r-servers)/servers
			}
			held := float64(exact[i])
			if extra := spec[i] - exact[i]; extra > 0 {
				held += e.SpeculativeWeight * float64(extra)
			}
			occ := float64(c.ActiveBlocks) / float64(c.TotalBlocks)
			want := -(wait + (32-held)*0.4 + tieBreakMs*(r+occ))
			if got := d.Scores[k]; math.Abs(got-want) > 1e-9 {
				t.Fatalf("round %d, rank %d (%s: exact %d, speculative to %d, R %d, pending %d): score %v, want %v",
					round, k, c.Pod, exact[i], spec[i], c.ActiveRequests, c.PrefillBlocks, got, want)
			}
		}
	}
}

// TestTTFTCostParams checks the factory's validation and WithTTFTCost's
// conversion of the engine plug-ins' block weights.
func TestTTFTCostParams(t *testing.T) {
	r := pipeline.NewRegistry()
	Register(r, Deps{Index: newFleet(t, 1).ix, Hasher: blockhash.DefaultHasher()})
	for _, bad := range []string{"max_running: 0", "prefill_per_token_us: -1", "decode_tokens: -2", "decode_per_token_ms: -1", "speculative_weight: 2"} {
		p := ttftProfile(t, testEngine)
		p.Score[0].Params = mustParams(t, bad)
		field := strings.SplitN(bad, ":", 2)[0]
		if _, err := r.Build(p); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("ttft-cost with %q: got %v, want an error naming %s", bad, err, field)
		}
	}
	p, err := WithTTFTCost(WithEngineLoad(DefaultProfile("d", 1, 0, 0.95), 16), testEngine, 16)
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range p.Score {
		switch sc.Type {
		case "kv-cost":
			t.Fatalf("kv-cost left in %v", p.Score)
		case "engine-active-blocks":
			if math.Abs(sc.Weight-0.4) > 1e-12 {
				t.Fatalf("engine-active-blocks weight %v, want 0.4 (one block's prefill, ms)", sc.Weight)
			}
		case "lora-affinity":
			if math.Abs(sc.Weight-6.4) > 1e-12 {
				t.Fatalf("lora-affinity weight %v, want 16 blocks = 6.4 ms", sc.Weight)
			}
		}
	}
	e := testEngine
	e.SpeculativeWeight = 0.25
	sp, err := WithTTFTCost(DefaultProfile("d", 1, 0, 0.95), e, 16)
	if err != nil {
		t.Fatal(err)
	}
	var tc TTFTCost
	if err := sp.Score[0].Params.Decode(&tc); err != nil || tc != e {
		t.Fatalf("ttft-cost params %+v (%v), want %+v", tc, err, e)
	}
}

// BenchmarkScorers times kv-cost and ttft-cost side by side over the 256
// pods of BenchmarkDecision's cell, after one Prepare, with a few pods'
// depth speculative and every pod's cache partly full (kv-cost weighs the
// pressure; kv-cost-nopressure is kv-cost at pressure weight 0).
func BenchmarkScorers(b *testing.B) {
	f, reqs, _ := decisionBench(b)
	l, err := index.NewLearner(f.ix, index.DefaultLearnConfig())
	if err != nil {
		b.Fatal(err)
	}
	hs := f.hasher.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), reqs[3], nil)
	for i := 0; i < 8; i++ {
		l.Speculate(f.cands[i*31].Slot, hs[:40], time.Now())
	}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range f.cands {
		f.cands[i].ActiveRequests = rng.IntN(12)
		f.cands[i].PrefillBlocks = rng.IntN(200)
		f.cands[i].HeldBlocks = rng.IntN(f.cands[i].TotalBlocks + 1)
	}
	for _, sw := range []float64{1, 0.5} {
		profiles := map[string]pipeline.ProfileConfig{
			"kv-cost":            WithSpeculativeWeight(DefaultProfile("default", 1, 0, 0.95), sw),
			"kv-cost-nopressure": WithPressureWeight(WithSpeculativeWeight(DefaultProfile("default", 1, 0, 0.95), sw), 0),
			"ttft-cost":          ttftProfile(b, TTFTCost{PrefillPerTokenUs: 25, DecodePerTokenMs: 2, DecodeTokens: 16, MaxRunning: 4, SpeculativeWeight: sw}),
		}
		for _, name := range []string{"kv-cost", "kv-cost-nopressure", "ttft-cost"} {
			b.Run(fmt.Sprintf("%s/spec=%v", name, sw), func(b *testing.B) {
				s := f.selector(b, profiles[name], nil)
				rc := pipeline.NewContext(nil, f.cands, rand.New(rand.NewPCG(1, 2)))
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
	}
}
