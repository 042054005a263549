package hierarchy

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

const smallTrace = "../../testdata/mooncake_small.jsonl"

// smallConfig is a tiny fleet on the small trace: 2 cells of 4 pods with
// caches small enough to evict, one seed.
func smallConfig() Config {
	c := DefaultConfig()
	c.TracePath = smallTrace
	c.Cells, c.PodsPerCell = 2, 4
	c.BlocksPerPod = 2048
	c.MaxRequests = 200
	c.Seeds = 1
	return c
}

// replaySmall replays cfg's trace and returns the simulation (open; the
// caller closes it) and the records.
func replaySmall(t *testing.T, cfg Config) (*sim, []trace.Record) {
	t.Helper()
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.replay(context.Background(), recs); err != nil {
		s.close()
		t.Fatal(err)
	}
	return s, recs
}

func TestRunInvariants(t *testing.T) {
	cfg := smallConfig()
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	in01 := func(name string, v float64) {
		if !(v >= 0 && v <= 1) {
			t.Errorf("%s got %v, want in [0, 1]", name, v)
		}
	}
	in01("reuse_flat", rep.ReuseFlat)
	in01("reuse_hier", rep.ReuseHier)
	in01("false_probe_rate", rep.FalseProbeRate)
	in01("max_pod_share_flat", rep.MaxPodShareFlat)
	in01("max_pod_share_hier", rep.MaxPodShareHier)
	if rep.Requests != cfg.MaxRequests {
		t.Errorf("requests got %d, want %d", rep.Requests, cfg.MaxRequests)
	}
	if want := int64(math.Round(rep.ReuseFlat * float64(rep.Blocks))); rep.MatchedBlocksFlat != want {
		t.Errorf("matched_blocks_flat got %d, want reuse_flat*blocks = %d", rep.MatchedBlocksFlat, want)
	}
	if rep.MatchedBlocksFlat <= 0 || rep.MatchedBlocksHier <= 0 {
		t.Errorf("matched blocks got flat %d hier %d, want both > 0 on a trace with shared prefixes", rep.MatchedBlocksFlat, rep.MatchedBlocksHier)
	}
	if want := (rep.ReuseFlat - rep.ReuseHier) / rep.ReuseFlat; math.Abs(rep.ReuseLoss-want) > 1e-12 {
		t.Errorf("reuse_loss got %v, want (flat-hier)/flat = %v", rep.ReuseLoss, want)
	}
	if rep.ProbesMax > cfg.MaxProbes || rep.ProbesP95 > rep.ProbesMax || rep.ProbesP50 > rep.ProbesP95 {
		t.Errorf("probes got p50 %d p95 %d max %d, want p50 <= p95 <= max <= %d", rep.ProbesP50, rep.ProbesP95, rep.ProbesMax, cfg.MaxProbes)
	}
	if rep.Probes > int64(cfg.MaxProbes)*int64(rep.Requests) || rep.FalseProbes > rep.Probes {
		t.Errorf("got %d probes, %d false, want probes <= %d and false <= probes", rep.Probes, rep.FalseProbes, cfg.MaxProbes*rep.Requests)
	}
	if rep.ColdRequests < 1 {
		t.Errorf("cold requests got %d, want >= 1 (the first request has no summary)", rep.ColdRequests)
	}
	var served int64
	for _, n := range rep.CellRequests {
		served += n
	}
	if len(rep.CellRequests) != cfg.Cells || served != int64(rep.Requests) {
		t.Errorf("cell_requests got %v, want %d cells summing to %d", rep.CellRequests, cfg.Cells, rep.Requests)
	}
	if want := int(math.Floor(rep.TraceSeconds/cfg.SummaryInterval)) + 1; rep.SummaryGenerations != want {
		t.Errorf("summary generations got %d, want %d", rep.SummaryGenerations, want)
	}
	if rep.SummaryBytesPerCell <= 0 || rep.GossipBytes <= 0 || rep.GossipBytesPerS <= 0 {
		t.Errorf("got summary bytes %v, gossip bytes %d (%v/s), want all > 0", rep.SummaryBytesPerCell, rep.GossipBytes, rep.GossipBytesPerS)
	}
	if got := rep.DeltaMessages + rep.SnapshotMessages; got != cfg.Cells*rep.SummaryGenerations {
		t.Errorf("gossip messages got %d, want one per cell and generation = %d", got, cfg.Cells*rep.SummaryGenerations)
	}
	if rep.EvictedBlocksFlat == 0 || rep.EvictedBlocksHier == 0 {
		t.Errorf("evictions got flat %d hier %d, want both > 0 at %d blocks per pod", rep.EvictedBlocksFlat, rep.EvictedBlocksHier, cfg.BlocksPerPod)
	}
	if !rep.IndexConsistent {
		t.Error("index_consistent got false, want true")
	}
	if want := rep.ReuseLossOK && rep.ProbesP95OK && rep.PodShareOK; rep.Pass != want {
		t.Errorf("pass got %v, want %v", rep.Pass, want)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"reuse_flat", "reuse_hier", "reuse_loss", "probes_p50", "probes_p95", "false_probe_rate",
		"summary_bytes_per_cell", "gossip_bytes_per_s", "max_pod_share_flat", "max_pod_share_hier", "requests", "blocks",
		"cells", "pods_per_cell", "seed", "block_size", "blocks_per_pod", "summary_interval_s", "max_probes", "stride", "fpr"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	var tab strings.Builder
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"prefix reuse", "reuse loss", "probes p50 / p95 / max", "gossip bytes per s"} {
		if !strings.Contains(tab.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, tab.String())
		}
	}
}

// TestOneCellEqualsFlat: with a single cell, the global tier can only send
// every request to it, and the cell's selector then sees exactly what the
// flat selector sees, with the same randomness, so every decision and the
// reuse are identical.
func TestOneCellEqualsFlat(t *testing.T) {
	cfg := smallConfig()
	cfg.Cells, cfg.PodsPerCell = 1, 8
	s, _ := replaySmall(t, cfg)
	defer s.close()
	if s.matchedFlat != s.matchedHier {
		t.Errorf("matched blocks got flat %d hier %d, want equal", s.matchedFlat, s.matchedHier)
	}
	if !slices.Equal(s.flat.served, s.hier.served) {
		t.Errorf("requests per pod got flat %v hier %v, want equal", s.flat.served, s.hier.served)
	}
	if s.flat.cl.evicted != s.hier.cells[0].evicted {
		t.Errorf("evicted got flat %d hier %d, want equal", s.flat.cl.evicted, s.hier.cells[0].evicted)
	}
	if s.matchedFlat == 0 {
		t.Error("matched blocks got 0, want > 0")
	}
	// Two cells of the same pods: the flat router's picks grouped into
	// those cells give the hierarchical router's cell shares.
	two := smallConfig()
	two.Cells, two.PodsPerCell = 2, 4
	s2, recs := replaySmall(t, two)
	defer s2.close()
	rep := s2.report(recs)
	if rep.MaxCellShare < 0.5 || rep.MaxCellShare > 1 || rep.MaxCellShareFlat < 0.5 || rep.MaxCellShareFlat > 1 {
		t.Errorf("busiest cell share hier %v flat %v, want both in [0.5, 1]", rep.MaxCellShare, rep.MaxCellShareFlat)
	}
	one := s.report(recs)
	if one.MaxCellShare != 1 || one.MaxCellShareFlat != 1 {
		t.Errorf("one cell: busiest cell share hier %v flat %v, want 1 and 1", one.MaxCellShare, one.MaxCellShareFlat)
	}
}

// TestIndexesMatchCaches checks the simulation's bookkeeping against a
// naive reference built from the engine caches at the end: every index
// holds exactly its pods' cached blocks with the right holders, and every
// cell's held set is their union with each block's depth in its chain.
func TestIndexesMatchCaches(t *testing.T) {
	cfg := smallConfig()
	s, recs := replaySmall(t, cfg)
	defer s.close()
	depth := map[blockhash.Hash]int{}
	var toks []uint32
	for _, r := range recs {
		toks = toks[:0]
		for _, id := range r.HashIDs {
			toks = trace.AppendTokens(toks, id)
		}
		for i, h := range s.hasher.Chain(s.seed, toks, nil) {
			depth[h] = i + 1
		}
	}
	check := func(cl *cluster) {
		want := map[blockhash.Hash]index.HostBitmap{}
		for i, c := range cl.caches {
			for _, h := range c.AppendContents(nil) {
				want[h] = want[h].Set(cl.cands[i].Slot)
			}
		}
		dump := cl.ix.Dump()
		if len(dump) != len(want) {
			t.Errorf("cell %s: index holds %d blocks, want %d", cl.id, len(dump), len(want))
		}
		for _, e := range dump {
			if w, ok := want[e.Hash]; !ok || w != e.Holders {
				t.Errorf("cell %s: block %v holders got %v, want %v", cl.id, e.Hash, e.Holders, w)
				return
			}
		}
		if cl.held == nil {
			return
		}
		if cl.held.Len() != len(want) {
			t.Errorf("cell %s: held set has %d blocks, want %d", cl.id, cl.held.Len(), len(want))
		}
		cl.held.forEach(func(h blockhash.Hash, d int) {
			if _, ok := want[h]; !ok || depth[h] != d {
				t.Errorf("cell %s: held block %v at depth %d, want held %v at depth %d", cl.id, h, d, ok, depth[h])
			}
		})
	}
	check(s.flat.cl)
	for _, cl := range s.hier.cells {
		check(cl)
	}
}

func TestHistQuantile(t *testing.T) {
	tests := []struct {
		hist []int64
		q    float64
		want int
	}{
		{[]int64{0, 0, 0}, 0.5, 0},
		{[]int64{10, 0, 0}, 0.95, 0},
		{[]int64{50, 50, 0}, 0.5, 0},
		{[]int64{50, 51, 0}, 0.5, 1},
		{[]int64{90, 5, 5}, 0.95, 1},
		{[]int64{90, 4, 6}, 0.95, 2},
	}
	for _, tt := range tests {
		if got := histQuantile(tt.hist, tt.q); got != tt.want {
			t.Errorf("histQuantile(%v, %v) got %d, want %d", tt.hist, tt.q, got, tt.want)
		}
	}
}

func TestRunErrors(t *testing.T) {
	cfg := smallConfig()
	cfg.TracePath = "does-not-exist.jsonl"
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "does-not-exist.jsonl") {
		t.Errorf("Run on a missing trace got %v, want an error naming the file", err)
	}
	cfg = smallConfig()
	cfg.Cells = 0
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "Cells") {
		t.Errorf("Run with no cells got %v, want a config error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, smallConfig()); err == nil {
		t.Error("Run with a cancelled context got nil, want an error")
	}
}

// TestRunTextPrompts replays the small trace with text prompts and chats:
// the engines, the global tier and the serving cells tokenize alike (no
// mismatch), prefixes are reused, and chats hit the global tier's segment
// cache (a conversation's earlier messages).
func TestRunTextPrompts(t *testing.T) {
	for _, prompt := range []string{PromptText, PromptChat} {
		t.Run(prompt, func(t *testing.T) {
			cfg := smallConfig()
			cfg.MaxRequests, cfg.Prompt = 120, prompt
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			tk := rep.Tokenize
			if rep.Prompt != prompt || tk == nil || tk.Tokenizer != "demo" {
				t.Fatalf("report prompt %q, tokenize %+v", rep.Prompt, tk)
			}
			if tk.Mismatches != 0 {
				t.Errorf("%d chains differ from the engine's", tk.Mismatches)
			}
			if rep.MatchedBlocksFlat <= 0 || rep.MatchedBlocksHier <= 0 || rep.Probes == 0 {
				t.Errorf("matched blocks flat %d hier %d, probes %d: want prefixes reused through summaries",
					rep.MatchedBlocksFlat, rep.MatchedBlocksHier, rep.Probes)
			}
			if tk.TokensPerRequest < 100 || tk.GlobalMeanUs <= 0 || tk.GlobalP99Us < 0 {
				t.Errorf("tokenize report %+v", tk)
			}
			if prompt == PromptChat && tk.CacheHitRatio <= 0 {
				t.Errorf("chat cache hit ratio %v, want > 0 (shared messages)", tk.CacheHitRatio)
			}
			if !rep.IndexConsistent {
				t.Errorf("index inconsistent")
			}
		})
	}
}
