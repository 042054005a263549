package hierarchy

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/loadtest/engine"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// TestSweepLevels: a sweep reports one level per load with the same fields,
// the top level is the configured load's, more load means more running
// requests (a larger TTFT estimate), and pass holds only if every level
// passes.
func TestSweepLevels(t *testing.T) {
	cfg := smallConfig()
	cfg.MaxRequests = 120
	cfg.Loads = []float64{5000, 20}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Levels) != 2 || rep.Levels[0].DecodeMsPerToken != 5000 || rep.Levels[1].DecodeMsPerToken != 20 {
		t.Fatalf("levels got %d, want 5000 then 20", len(rep.Levels))
	}
	if rep.DecodeMsPerToken != 20 || rep.ReuseHier != rep.Levels[1].ReuseHier || rep.ProbesP95 != rep.Levels[1].ProbesP95 {
		t.Errorf("top level got %v ms (reuse %v), want the configured 20 ms level (reuse %v)", rep.DecodeMsPerToken, rep.ReuseHier, rep.Levels[1].ReuseHier)
	}
	if want := rep.Levels[0].Pass && rep.Levels[1].Pass; rep.Pass != want {
		t.Errorf("pass got %v, want %v (every level)", rep.Pass, want)
	}
	busy, idle := rep.Levels[0], rep.Levels[1]
	if !(busy.TTFTMeanFlatMs > idle.TTFTMeanFlatMs) || !(busy.TTFTMeanHierMs > idle.TTFTMeanHierMs) {
		t.Errorf("TTFT mean got flat %v/%v hier %v/%v ms at 5000/20 ms a token, want more under load",
			busy.TTFTMeanFlatMs, idle.TTFTMeanFlatMs, busy.TTFTMeanHierMs, idle.TTFTMeanHierMs)
	}
	for _, l := range rep.Levels {
		if !(l.TTFTP50FlatMs <= l.TTFTP95FlatMs && l.TTFTP50HierMs <= l.TTFTP95HierMs) || l.QueuedFlat > int64(l.Requests) || l.QueuedHier > int64(l.Requests) {
			t.Errorf("level %v: ttft p50/p95 flat %v/%v hier %v/%v, queued %d/%d of %d", l.DecodeMsPerToken,
				l.TTFTP50FlatMs, l.TTFTP95FlatMs, l.TTFTP50HierMs, l.TTFTP95HierMs, l.QueuedFlat, l.QueuedHier, l.Requests)
		}
		if l.Levels != nil {
			t.Errorf("level %v has levels of its own", l.DecodeMsPerToken)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Levels []map[string]any `json:"levels"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reuse_flat", "reuse_hier", "reuse_loss", "probes_p50", "probes_p95", "false_probes", "max_pod_share_flat",
		"max_pod_share_hier", "max_cell_share", "queued_flat", "queued_hier", "ttft_mean_flat_ms", "ttft_mean_hier_ms", "decode_ms_per_token"} {
		for i, l := range m.Levels {
			if _, ok := l[k]; !ok {
				t.Errorf("JSON level %d lacks %q", i, k)
			}
		}
	}
}

// TestAgentsTrace: the generated workload is deterministic, in time order,
// well formed (hash ids match input lengths), and shaped as documented:
// every turn of a session extends the previous one by one id, and the
// replay finds most of each prompt cached.
func TestAgentsTrace(t *testing.T) {
	a, b := AgentsTrace(3000, 1), AgentsTrace(3000, 1)
	if len(a) != 3000 || !slices.EqualFunc(a, b, func(x, y trace.Record) bool {
		return x.Timestamp == y.Timestamp && slices.Equal(x.HashIDs, y.HashIDs) && x.OutputLength == y.OutputLength
	}) {
		t.Fatal("AgentsTrace is not deterministic for a seed, or not of the asked length")
	}
	byTask := map[uint64][]trace.Record{}
	for i, r := range a {
		if i > 0 && r.Timestamp < a[i-1].Timestamp {
			t.Fatalf("record %d at %d ms before its predecessor at %d ms", i, r.Timestamp, a[i-1].Timestamp)
		}
		if len(r.HashIDs) != trace.ExpectedIDs(r.InputLength) || r.OutputLength < 1 {
			t.Fatalf("record %d: %d ids for %d tokens, output %d", i, len(r.HashIDs), r.InputLength, r.OutputLength)
		}
		// The task id is the first id above the system prompt's range.
		for _, id := range r.HashIDs {
			if id > 1<<41 {
				byTask[id] = append(byTask[id], r)
				break
			}
		}
	}
	for task, turns := range byTask {
		for k := 1; k < len(turns); k++ {
			prev, cur := turns[k-1].HashIDs, turns[k].HashIDs
			if len(cur) != len(prev)+1 || !slices.Equal(cur[:len(prev)], prev) {
				t.Fatalf("task %d turn %d does not extend turn %d by one id", task, k, k-1)
			}
		}
	}
	cfg := smallConfig()
	cfg.Workload, cfg.MaxRequests = WorkloadAgents, 400
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.ReuseFlat < 0.5 || rep.Trace == cfg.TracePath {
		t.Errorf("agents replay got flat reuse %v and trace %q, want > 0.5 and the generated workload named", rep.ReuseFlat, rep.Trace)
	}
}

// TestColdWorkload: the cold workload replays through both routers, more
// than a third of the hierarchy's requests take the cold path (no summary
// knows their first block), and the report names the generated workload.
func TestColdWorkload(t *testing.T) {
	cfg := smallConfig()
	cfg.Workload, cfg.MaxRequests = WorkloadCold, 400
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 400 || rep.Trace == cfg.TracePath || rep.Workload != WorkloadCold {
		t.Errorf("cold replay got %d requests, trace %q, workload %q, want 400 of the generated cold workload", rep.Requests, rep.Trace, rep.Workload)
	}
	if rep.ColdRequests*3 < int64(rep.Requests) || !(rep.ReuseFlat > 0.2) {
		t.Errorf("cold replay got %d cold of %d requests, flat reuse %v, want more than a third cold and reuse above 0.2",
			rep.ColdRequests, rep.Requests, rep.ReuseFlat)
	}
}

// TestExactDepthAgainstLookup checks the scale model's binary search of a
// cell's cached prefix against the cache's own linear Lookup.
func TestExactDepthAgainstLookup(t *testing.T) {
	c := engine.NewCache(300)
	chains := make([][]blockhash.Hash, 20)
	for i := range chains {
		chains[i] = make([]blockhash.Hash, 1+i*7)
		for j := range chains[i] {
			chains[i][j] = blockhash.Hash(uint64(i+1)<<32 | uint64(j+1))
		}
		if j := len(chains[i]) / 2; i > 0 {
			copy(chains[i][:j], chains[i-1][:min(j, len(chains[i-1]))])
		}
	}
	var removed []blockhash.Hash
	for round := range 3 {
		for i, ch := range chains {
			if (i+round)%3 == 0 {
				removed = c.Admit(int64(round*100+i), ch, removed).Removed
			}
		}
		for i, ch := range chains {
			if got, want := exactDepth(c, ch), c.Lookup(ch); got != want {
				t.Fatalf("round %d chain %d: exactDepth got %d, want Lookup's %d", round, i, got, want)
			}
		}
	}
}

// TestSeedsPool: a level of several seeds is each seed's replay, as a run
// of that seed alone makes it, with the reuse pooled over their blocks.
func TestSeedsPool(t *testing.T) {
	cfg := smallConfig()
	cfg.DecodeMsPerToken = 2000 // loaded, so that tie-breaks matter
	cfg.Seeds = 3
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Seeds, []uint64{42, 43, 44}) || len(rep.SeedRuns) != 3 {
		t.Fatalf("seeds %v, runs %+v; want 42, 43 and 44", rep.Seeds, rep.SeedRuns)
	}
	var flat, hier, pod float64
	for _, sr := range rep.SeedRuns {
		one := cfg
		one.Seed, one.Seeds = sr.Seed, 1
		alone, err := Run(context.Background(), one)
		if err != nil {
			t.Fatal(err)
		}
		if alone.seedRun() != sr {
			t.Fatalf("seed %d pooled as %+v, alone %v / %v / %v", sr.Seed, sr, alone.ReuseFlat, alone.ReuseHier, alone.ReuseLoss)
		}
		flat += sr.ReuseFlat
		hier += sr.ReuseHier
		pod += sr.MaxPodShareHier
	}
	if math.Abs(rep.MaxPodShareHier-pod/3) > 1e-12 {
		t.Fatalf("busiest pod %v, want the seeds' mean %v", rep.MaxPodShareHier, pod/3)
	}
	// Every seed replays the same requests, so pooling their blocks is the
	// mean of their reuse.
	if math.Abs(rep.ReuseFlat-flat/3) > 1e-12 || math.Abs(rep.ReuseHier-hier/3) > 1e-12 {
		t.Fatalf("pooled reuse %v / %v, want the seeds' mean %v / %v", rep.ReuseFlat, rep.ReuseHier, flat/3, hier/3)
	}
	if want := (rep.ReuseFlat - rep.ReuseHier) / rep.ReuseFlat; math.Abs(rep.ReuseLoss-want) > 1e-12 || rep.ReuseLossOK != (want <= MaxReuseLoss) {
		t.Fatalf("pooled loss %v (ok %v), want %v", rep.ReuseLoss, rep.ReuseLossOK, want)
	}
	if want := seedSE(rep.SeedRuns); rep.ReuseLossSE != want {
		t.Fatalf("pooled loss's standard error %v, want the seeds' %v", rep.ReuseLossSE, want)
	}
}

// TestLoadAnnouncements: with a load interval the cells announce their
// load between summaries, one header per cell each time, counted in the
// gossip bytes; without one they announce none.
func TestLoadAnnouncements(t *testing.T) {
	cfg := smallConfig()
	cfg.DecodeMsPerToken = 2000
	quiet, recs := replaySmall(t, cfg)
	defer quiet.close()
	cfg.LoadInterval = 0.5
	loud, _ := replaySmall(t, cfg)
	defer loud.close()
	span := float64(recs[len(recs)-1].Timestamp-recs[0].Timestamp) / 1e3
	if want := int(span/cfg.LoadInterval) + 1; loud.nextLoad != want || quiet.nextLoad != 0 {
		t.Fatalf("announcements %d with a %gs interval over %.1f s (want %d), %d without (want 0)", loud.nextLoad, cfg.LoadInterval, span, want, quiet.nextLoad)
	}
	q, l := quiet.report(recs), loud.report(recs)
	if l.GossipBytes <= q.GossipBytes || l.SummaryGenerations != q.SummaryGenerations {
		t.Fatalf("gossip bytes %d with announcements, %d without; generations %d and %d: want more bytes, the same generations",
			l.GossipBytes, q.GossipBytes, l.SummaryGenerations, q.SummaryGenerations)
	}
}

// TestSeedSE checks the seeds' standard error against a reference that
// computes the variance another way: the mean squared difference of every
// pair of seeds, halved (sum over i<j of (x_i-x_j)^2 / (n(n-1))).
func TestSeedSE(t *testing.T) {
	pairwise := func(xs []float64) float64 {
		n := float64(len(xs))
		var s float64
		for i := range xs {
			for j := i + 1; j < len(xs); j++ {
				s += (xs[i] - xs[j]) * (xs[i] - xs[j])
			}
		}
		return math.Sqrt(s/(n*(n-1))) / math.Sqrt(n)
	}
	runs := func(xs ...float64) []SeedRun {
		out := make([]SeedRun, len(xs))
		for i, x := range xs {
			out[i] = SeedRun{Seed: uint64(42 + i), ReuseLoss: x}
		}
		return out
	}
	if got := seedSE(runs(0.01, 0.02, 0.03)); math.Abs(got-0.01/math.Sqrt(3)) > 1e-15 {
		t.Fatalf("seedSE(0.01, 0.02, 0.03) = %v, want %v", got, 0.01/math.Sqrt(3))
	}
	if got := seedSE(runs(0.5)); got != 0 {
		t.Fatalf("seedSE of one seed = %v, want 0", got)
	}
	if got := seedSE(runs(-0.02, -0.02, -0.02, -0.02)); got != 0 {
		t.Fatalf("seedSE of equal seeds = %v, want 0", got)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		xs := make([]float64, 2+rng.IntN(12))
		for i := range xs {
			xs[i] = rng.NormFloat64()*0.005 - 0.01
		}
		if got, want := seedSE(runs(xs...)), pairwise(xs); math.Abs(got-want) > 1e-12 {
			t.Fatalf("round %d: seedSE(%v) = %v, want %v", round, xs, got, want)
		}
	}
}
