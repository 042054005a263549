package indexbench

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

const smallTrace = "../../testdata/mooncake_small.jsonl"

// smallConfig runs the whole method on the 300-request slice in seconds.
func smallConfig() Config {
	c := DefaultConfig()
	c.TracePath = smallTrace
	c.Verify = false // TestWorkloadInvariants verifies the same workload
	c.Window = 100 * time.Millisecond
	c.Steps = 12
	c.StepsPerDecade = 4
	c.BlocksPerWorker = 2048 // small enough that the engines evict
	c.Workers = 64           // keeps the naive baseline quick under -race
	return c
}

func TestWorkloadInvariants(t *testing.T) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var events, ops int64
	for i := range w.streams {
		s := &w.streams[i]
		events += int64(len(s.end))
		ops += int64(len(s.ops))
		for k := range s.end {
			for _, op := range s.ops[s.start(k):s.end[k]] {
				if int(op.Slot)%len(w.streams) != i {
					t.Fatalf("stream %d holds an op of pod %d", i, op.Slot)
				}
			}
			if k > 0 && (s.at[k] < s.at[k-1] || s.req[k] < s.req[k-1]) {
				t.Fatalf("stream %d event %d is out of order", i, k)
			}
		}
	}
	if got, want := events, w.StoredEvents+w.RemovedEvents; got != want {
		t.Errorf("got %d events in the streams, want %d", got, want)
	}
	if got, want := ops, w.StoredBlocks+w.RemovedBlocks; got != want {
		t.Errorf("got %d ops in the streams, want %d", got, want)
	}
	if w.RemovedBlocks == 0 {
		t.Errorf("got no evictions with %d blocks per worker, want some", cfg.BlocksPerWorker)
	}
	perID := trace.TokensPerID / cfg.BlockSize
	for i, r := range recs {
		if got, want := len(w.Chains[i]), len(r.HashIDs)*perID; got != want {
			t.Fatalf("request %d: got %d blocks, want %d", i, got, want)
		}
	}
	// Every request starts with hash id 0, so all chains share their first blocks.
	if w.Chains[0][perID-1] != w.Chains[1][perID-1] || w.Chains[0][perID] == w.Chains[1][perID] {
		t.Error("chains of requests 0 and 1 do not share exactly their first hash id's blocks")
	}
	// The build is deterministic.
	w2, err := BuildWorkload(recs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range w.Chains {
		if w.Worker[i] != w2.Worker[i] || w.Hit[i] != w2.Hit[i] || w.Chains[i][len(w.Chains[i])-1] != w2.Chains[i][len(w2.Chains[i])-1] {
			t.Fatalf("request %d differs between two builds", i)
		}
	}
	start := time.Now()
	if err := Verify(w, CellIndex, NaiveIndex); err != nil {
		t.Fatal(err)
	}
	t.Logf("verify took %v", time.Since(start))
}

func TestRunSmall(t *testing.T) {
	rep, err := Run(context.Background(), smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Requests != 300 || rep.Queries != 300 {
		t.Errorf("got %d requests, %d queries, want 300", rep.Requests, rep.Queries)
	}
	if rep.Events != rep.StoredEvents+rep.RemovedEvents {
		t.Errorf("got events %d, want stored %d + removed %d", rep.Events, rep.StoredEvents, rep.RemovedEvents)
	}
	if rep.BlockOps != rep.StoredBlocks+rep.RemovedBlocks+rep.QueryBlocks {
		t.Errorf("got block-ops %d, want %d + %d + %d", rep.BlockOps, rep.StoredBlocks, rep.RemovedBlocks, rep.QueryBlocks)
	}
	if rep.Verified {
		t.Error("got verified true with Verify off, want false")
	}
	if rep.Baseline == nil {
		t.Fatal("got no baseline result")
	}
	for _, res := range []*Result{&rep.Result, rep.Baseline} {
		checkResult(t, res, rep)
	}
	if want := rep.ThresholdBlockOpsPerS / rep.Baseline.ThresholdBlockOpsPerS; math.Abs(rep.Speedup-want) > 1e-9*want {
		t.Errorf("got speedup %v, want %v", rep.Speedup, want)
	}
	if want := rep.Result.Valid && rep.Baseline.Valid; rep.Valid != want {
		t.Errorf("got valid %v, want %v", rep.Valid, want)
	}
	if !rep.Valid {
		// A run is invalid when its threshold step left more than 5% queued
		// at the end of the window; on a machine loaded by other processes
		// that can happen, so it is logged, and checkResult checks that the
		// flag agrees with the figures.
		t.Logf("the run was invalid (a threshold step's backlog above %v): cell/index %+v", smallConfig().MaxBacklog, rep.Result.Steps)
	}
}

// checkResult checks the invariants of one indexer's result.
func checkResult(t *testing.T, res *Result, rep Report) {
	t.Helper()
	if res.ThresholdBlockOpsPerS <= 0 {
		t.Errorf("%s: got threshold %v, want > 0", res.Indexer, res.ThresholdBlockOpsPerS)
	}
	// The threshold step is the passing step with the highest offered rate.
	best := -1
	for i, st := range res.Steps {
		if st.Pass && (best < 0 || st.OfferedRate > res.Steps[best].OfferedRate) {
			best = i
		}
	}
	if best < 0 {
		t.Fatalf("%s: no step passed: %+v", res.Indexer, res.Steps)
	}
	last := res.Steps[best]
	if want := last.Backlog <= 0.05; res.Valid != want {
		t.Errorf("%s: got valid %v with threshold backlog %v, want %v", res.Indexer, res.Valid, last.Backlog, want)
	}
	if res.Backlog != last.Backlog {
		t.Errorf("%s: got backlog %v, want the threshold step's %v", res.Indexer, res.Backlog, last.Backlog)
	}
	if res.ThresholdBlockOpsPerS != last.OfferedRate {
		t.Errorf("%s: got threshold %v, want the best passing step's offered rate %v", res.Indexer, res.ThresholdBlockOpsPerS, last.OfferedRate)
	}
	for i, st := range res.Steps {
		if st.DoneBlockOps > st.BlockOps || st.DoneEvents > st.Events || st.DoneQueries > st.Queries {
			t.Errorf("%s step %d: done exceeds offered: %+v", res.Indexer, i, st)
		}
		if st.BlockOps > rep.BlockOps || st.Queries > rep.Queries || st.Events > rep.Events {
			t.Errorf("%s step %d: offered exceeds the timeline: %+v", res.Indexer, i, st)
		}
		if st.Pass != (st.AchievedRate >= 0.95*st.OfferedRate) {
			t.Errorf("%s step %d: pass %v inconsistent with achieved %v offered %v", res.Indexer, i, st.Pass, st.AchievedRate, st.OfferedRate)
		}
		if math.Abs(st.Backlog-st.EventBacklog-st.QueryBacklog) > 1e-9 {
			t.Errorf("%s step %d: backlog %v is not events %v + queries %v", res.Indexer, i, st.Backlog, st.EventBacklog, st.QueryBacklog)
		}
	}
	if last.DoneQueries > 0 && (res.QueryP50Ns <= 0 || res.QueryP99Ns < res.QueryP50Ns || res.QueryMaxNs < res.QueryP99Ns) {
		t.Errorf("%s: got latencies p50 %d p99 %d max %d, want 0 < p50 <= p99 <= max", res.Indexer, res.QueryP50Ns, res.QueryP99Ns, res.QueryMaxNs)
	}
	if res.QuerySamples != last.DoneQueries {
		t.Errorf("%s: got %d query samples, want %d", res.Indexer, res.QuerySamples, last.DoneQueries)
	}
	if res.IndexedBlocks != rep.DistinctBlocks {
		t.Errorf("%s: got %d indexed blocks, want %d", res.Indexer, res.IndexedBlocks, rep.DistinctBlocks)
	}
	if res.BytesPerBlock <= 0 {
		t.Errorf("%s: got %v bytes per block, want > 0", res.Indexer, res.BytesPerBlock)
	}
	if res.MatchAllocsPerOp != 0 {
		t.Errorf("%s: got %v allocations per Match, want 0", res.Indexer, res.MatchAllocsPerOp)
	}
}

// TestExpectedBlocks checks the capacity hint the indexers are built with:
// the fleet's capacity by default, none when negative, and a given value as
// is; and that the cell index reserves table memory for it.
func TestExpectedBlocks(t *testing.T) {
	c := DefaultConfig()
	c.Workers, c.BlocksPerWorker = 8, 1000
	for _, tt := range []struct{ set, want int }{{0, 8000}, {-1, 0}, {5000, 5000}} {
		c.ExpectedBlocks = tt.set
		if got := c.expectedBlocks(); got != tt.want {
			t.Errorf("ExpectedBlocks %d: hint %d, want %d", tt.set, got, tt.want)
		}
	}
	small, err := CellIndex.New(4, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	big, err := CellIndex.New(4, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close()
	s, b := small.(accounter).AccountedBytes(), big.(accounter).AccountedBytes()
	if b < 16<<20 || b <= s {
		t.Errorf("table bytes: %d with a hint of 1M blocks, %d without; want at least 16 MiB reserved", b, s)
	}
}

// TestLearnerAttachedMatches checks the index with an idle learner
// attached against the engine model and the plain index, query by query.
func TestLearnerAttachedMatches(t *testing.T) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := BuildWorkload(recs, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(w, CellIndex, CellIndexWithLearner); err != nil {
		t.Fatal(err)
	}
}

// TestPagedLayoutMatches checks the paged layout, with and without an idle
// learner, against the engine model and the block layout, query by query
// and pod by pod: every op the workload built carries its place.
func TestPagedLayoutMatches(t *testing.T) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	cfg.BlocksPerWorker = 512 // evictions, so removals are placed too
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if w.RemovedBlocks == 0 {
		t.Fatal("the workload removes no block: removals are not exercised")
	}
	if err := Verify(w, CellIndex, PagedIndex, PagedIndexWithLearner); err != nil {
		t.Fatal(err)
	}
}

// TestRunBothLayouts runs both layouts in one run and checks the side by
// side report.
func TestRunBothLayouts(t *testing.T) {
	cfg := smallConfig()
	cfg.Layout = LayoutBoth
	cfg.Baseline = false
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Paged == nil || rep.PagedVsBlock == nil {
		t.Fatalf("got paged %v, ratios %v: want both", rep.Paged, rep.PagedVsBlock)
	}
	if rep.Result.Indexer != CellIndex.Name || rep.Paged.Indexer != PagedIndex.Name {
		t.Errorf("got indexers %q and %q, want %q and %q", rep.Result.Indexer, rep.Paged.Indexer, CellIndex.Name, PagedIndex.Name)
	}
	for _, res := range []*Result{&rep.Result, rep.Paged} {
		checkResult(t, res, rep)
		if res.IdleLookupsP99 < res.IdleLookupsP50 || res.IdleRoundsP50 < 1 || res.IdleBestP99Ns < res.IdleBestP50Ns {
			t.Errorf("%s: reads p50 %d p99 %d, rounds p50 %d, best p50 %d p99 %d: want ordered percentiles and at least a round",
				res.Indexer, res.IdleLookupsP50, res.IdleLookupsP99, res.IdleRoundsP50, res.IdleBestP50Ns, res.IdleBestP99Ns)
		}
	}
	if want := rep.Paged.BytesPerBlock / rep.Result.BytesPerBlock; math.Abs(rep.PagedVsBlock.BytesPerBlock-want) > 1e-9*want {
		t.Errorf("got bytes ratio %v, want %v", rep.PagedVsBlock.BytesPerBlock, want)
	}
	var buf strings.Builder
	if err := rep.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "paged / block") || !strings.Contains(buf.String(), PagedIndex.Name) {
		t.Errorf("the table does not show the paged layout:\n%s", buf.String())
	}
}
