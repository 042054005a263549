package compare

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// conversations returns convs conversations of turns turns each, turns
// interleaved gapMs apart: every prompt starts with the shared hash id 0,
// then the conversation's own id, then two more ids per turn, so turn t
// extends turn t-1.
func conversations(convs, turns int, gapMs int64) []trace.Record {
	var out []trace.Record
	next := uint64(1 + convs)
	hist := make([][]uint64, convs)
	for c := range hist {
		hist[c] = []uint64{0, uint64(1 + c)}
	}
	for t := 0; t < turns; t++ {
		for c := 0; c < convs; c++ {
			hist[c] = append(hist[c], next, next+1)
			next += 2
			ids := append([]uint64(nil), hist[c]...)
			out = append(out, trace.Record{Timestamp: int64(len(out)) * gapMs, InputLength: len(ids)*trace.TokensPerID - 100,
				OutputLength: 8, HashIDs: ids})
		}
	}
	return out
}

// writeTrace writes recs as a Mooncake trace file and returns its path.
func writeTrace(t *testing.T, recs []trace.Record) string {
	t.Helper()
	var b strings.Builder
	for _, r := range recs {
		ids, _ := json.Marshal(r.HashIDs)
		fmt.Fprintf(&b, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": %s}`+"\n", r.Timestamp, r.InputLength, r.OutputLength, ids)
	}
	p := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunTiny(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TracePath = writeTrace(t, conversations(3, 4, 150))
	cfg.Sample, cfg.TimeScale, cfg.Pods, cfg.BlocksPerPod = 1, 1, 3, 4096
	cfg.PrefillPerToken, cfg.DecodePerToken, cfg.MaxTokensCap = time.Microsecond, 100*time.Microsecond, 4
	rep, err := Run(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if _, ok := got["reachable_reuse"].(float64); !ok {
		t.Errorf("JSON lacks a numeric reachable_reuse: %s", data)
	}
	modes, _ := got["modes"].(map[string]any)
	for _, m := range ModeNames {
		mm, ok := modes[m].(map[string]any)
		if !ok {
			t.Fatalf("JSON lacks modes.%s: %s", m, data)
		}
		for _, k := range []string{"ttft_p50_ms", "ttft_p99_ms", "cached_token_ratio", "max_pod_share", "requests", "errors", "e2e_p50_ms"} {
			if _, ok := mm[k].(float64); !ok {
				t.Errorf("modes.%s lacks a numeric %s", m, k)
			}
		}
		if ok := rep.Modes[m].OK; ok != 12 {
			t.Errorf("mode %s got %d successful requests, want 12 (errors %v)", m, ok, rep.Modes[m].ErrorsByKind)
		}
		if pods := len(rep.Modes[m].Pods); pods != 3 {
			t.Errorf("mode %s got %d pods in its load, want 3", m, pods)
		}
		if m == ModeRoundRobin {
			continue
		}
		vs, ok := mm["vs_round_robin"].(map[string]any)
		if !ok {
			t.Fatalf("modes.%s lacks vs_round_robin: %s", m, data)
		}
		for _, k := range []string{"ttft_p50_speedup", "cached_ratio_gain", "max_share_over_mean"} {
			if _, ok := vs[k].(float64); !ok {
				t.Errorf("modes.%s.vs_round_robin lacks a numeric %s", m, k)
			}
		}
	}
	// Without events the cell still learns where each conversation went.
	if got := rep.Modes[ModeApprox].CachedTokenRatio; got <= 0 {
		t.Errorf("got approx cached-token ratio %.3f, want above 0 (later turns find their pod)", got)
	}
	kv, rr := rep.Modes[ModeKV].CachedTokenRatio, rep.Modes[ModeRoundRobin].CachedTokenRatio
	if kv < rr {
		t.Errorf("got kv cached-token ratio %.3f < round-robin's %.3f, want kv >= round-robin", kv, rr)
	}
	if kv <= 0 || rep.ReachableReuse <= 0 {
		t.Errorf("got kv ratio %.3f and reachable reuse %.3f, want both positive", kv, rep.ReachableReuse)
	}
	if rep.Checks == nil {
		t.Errorf("got no checks, want them with kv and round_robin run")
	}
	dir := t.TempDir()
	if err := rep.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"index.html", "ttft_cdf.svg", "pods_kv.svg"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("WriteDir did not write %s: %v", f, err)
		}
	}
	checkRequestsCSV(t, filepath.Join(dir, "requests_kv.csv"), rep.Modes[ModeKV])
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "round_robin") {
		t.Errorf("WriteTable got %q (%v), want a row per mode", table.String(), err)
	}
}

func TestSampleConversations(t *testing.T) {
	recs := conversations(50, 3, 1)
	if got := SampleConversations(recs, 1); len(got) != len(recs) {
		t.Errorf("k=1 got %d records, want all %d", len(got), len(recs))
	}
	got := SampleConversations(recs, 5)
	turns := map[uint64]int{}
	for _, r := range got {
		turns[r.HashIDs[1]]++
	}
	for conv, n := range turns {
		if n != 3 {
			t.Errorf("conversation %d kept %d of its 3 turns, want all or none", conv, n)
		}
	}
	if len(turns) == 0 || len(turns) >= 50 {
		t.Errorf("k=5 kept %d of 50 conversations, want some but not all", len(turns))
	}
}

// naiveReuse is the reference of an unbounded cache: a set of every block
// hash seen, a request hitting its longest prefix in the set.
func naiveReuse(recs []trace.Record, blockSize int) float64 {
	h, _ := blockhash.NewHasher(blockSize)
	seed := blockhash.Seed(blockhash.Keys{Model: "m"})
	seen := map[blockhash.Hash]bool{}
	var prompt, cached int
	for _, r := range recs {
		toks := replay.PromptTokens(nil, r)
		chain := h.Chain(seed, toks, nil)
		hit := 0
		for hit < len(chain) && seen[chain[hit]] {
			hit++
		}
		hit = min(hit, (len(toks)-1)/blockSize)
		prompt += len(toks)
		cached += hit * blockSize
		for _, b := range chain {
			seen[b] = true
		}
	}
	return float64(cached) / float64(prompt)
}

func TestReachableReuseAgainstNaive(t *testing.T) {
	recs := conversations(5, 4, 1)
	recs = append(recs, recs[3]) // a full repeat: the last block is recomputed
	got, err := ReachableReuse(recs, "m", 16, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if want := naiveReuse(recs, 16); got.Ratio != want {
		t.Errorf("got ratio %v, want %v", got.Ratio, want)
	}
	small, err := ReachableReuse(recs, "m", 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	if small.Ratio >= got.Ratio {
		t.Errorf("got %v with 64 blocks and %v unbounded, want less reuse from the small cache", small.Ratio, got.Ratio)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"quick", func(c *Config) { *c = QuickConfig() }, ""},
		{"sample", func(c *Config) { c.Sample = 0 }, "Sample = 0"},
		{"pods", func(c *Config) { c.Pods = 0 }, "Pods = 0"},
		{"blocks", func(c *Config) { c.BlocksPerPod = 0 }, "BlocksPerPod = 0"},
		{"mode", func(c *Config) { c.Modes = []string{"kv", "fastest"} }, `Modes has "fastest"`},
		{"time scale", func(c *Config) { c.TimeScale = -1 }, "TimeScale = -1"},
		{"trace", func(c *Config) { c.TracePath = "" }, "TracePath is empty"},
		{"bypass", func(c *Config) { c.Bypass = 1 }, "Bypass = 1"},
		{"bypass pods", func(c *Config) { c.Bypass, c.BypassPods = 0.2, 9 }, "BypassPods = 9"},
		{"kv-engine", func(c *Config) { c.Modes = []string{ModeKV, ModeKVEngine} }, ""},
		{"cost", func(c *Config) { c.Cost = "cheapest" }, `Cost "cheapest"`},
		{"blocks cost", func(c *Config) { c.Cost = "blocks" }, ""},
		{"workload", func(c *Config) { c.Workload = "warm" }, `Workload "warm"`},
		{"cold without a trace", func(c *Config) { c.Workload, c.TracePath = WorkloadCold, "" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("got %v, want error containing %q", err, tt.want)
			}
		})
	}
}

func TestRunBadTrace(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(p, []byte("{\"timestamp\":0,\"input_length\":10,\"output_length\":1,\"hash_ids\":[0]}\n{oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.TracePath = p
	_, err := Run(context.Background(), cfg, Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.jsonl:2:") {
		t.Errorf("got %v, want an error naming the file and line 2", err)
	}
}

// checkRequestsCSV reads a mode's per-request CSV back: a row per
// request, the successful ones with the mode's TTFTs and cached tokens.
func checkRequestsCSV(t *testing.T, path string, m *ModeResult) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(m.results)+1 || !slices.Equal(rows[0], requestsHeader) {
		t.Fatalf("got %d rows (header %q), want a header and %d requests", len(rows), rows[0], len(m.results))
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[h] = i
	}
	var cached int
	for i, row := range rows[1:] {
		r := m.results[i]
		ttft, err := strconv.ParseFloat(row[col["ttft_ms"]], 64)
		if err != nil || math.Abs(ttft-float64(r.TTFT.Microseconds())/1000) > 0.001 {
			t.Errorf("row %d: ttft_ms %q, want %v", i, row[col["ttft_ms"]], r.TTFT)
		}
		if row[col["pod"]] != r.Pod || row[col["index"]] != strconv.Itoa(r.Index) {
			t.Errorf("row %d: pod %q index %q, want %q %d", i, row[col["pod"]], row[col["index"]], r.Pod, r.Index)
		}
		c, err := strconv.Atoi(row[col["cached_tokens"]])
		if err != nil {
			t.Errorf("row %d: cached_tokens %q: %v", i, row[col["cached_tokens"]], err)
		}
		if r.OK() {
			cached += c
		}
	}
	if cached <= 0 {
		t.Errorf("got %d cached tokens over the rows, want the kv mode's hits", cached)
	}
}
