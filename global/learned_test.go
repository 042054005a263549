package global

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/gossip"
)

// startLearningCell is a real cell with two instant pods publishing no KV
// events: events "none" (the approximate index) or "exact" (speculative
// entries only).
func startLearningCell(t *testing.T, id, podEvents string, hits *sync.Map) *testCell {
	t.Helper()
	cfg := cell.DefaultConfig()
	cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, cfg.HealthInterval = id, "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.Approximate.DefaultPodEvents = podEvents
	for i := 0; i < 2; i++ {
		pid := fmt.Sprintf("%s-pod%d", id, i)
		cfg.Pods = append(cfg.Pods, cell.PodConfig{ID: pid, Address: testPod(t, pid, hits)})
	}
	c, err := cell.New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &testCell{id: id, c: c}
}

// publishedView is the cell's view as globald gets it from gossip: its
// real summary, learned blocks included.
func (tc *testCell) publishedView(t *testing.T) CellView {
	t.Helper()
	b, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	if err != nil {
		t.Fatal(err)
	}
	s := tc.c.Summary(b)
	return CellView{ID: tc.id, HTTPAddr: tc.c.HTTPAddr(), GRPCAddr: tc.c.GRPCAddr(), Alive: true, Summary: s, SummaryBytes: s.SizeBytes()}
}

var fromPod = regexp.MustCompile(`from (cell-[a-z]+-pod[0-9])`)

// servedBy sends a completion through globald and returns the pod that
// answered.
func servedBy(t *testing.T, g *Global, toks []uint32) string {
	t.Helper()
	resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 4})
	m := fromPod.FindStringSubmatch(body)
	if resp.StatusCode != 200 || m == nil {
		t.Fatalf("got %d %q, want an answer from a pod", resp.StatusCode, body)
	}
	return m[1]
}

// blockChain hashes toks as cells hash requests for model m.
func blockChain(toks []uint32) []blockhash.Hash {
	return blockhash.DefaultHasher().Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
}

// matchSource returns the cell's count of decisions whose match came from
// src (cellrouter_route_match_source_total), as /metrics prints it.
func matchSource(t *testing.T, tc *testCell, src string) string {
	t.Helper()
	resp, err := http.Get("http://" + tc.c.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "cellrouter_route_match_source_total") && strings.Contains(line, `source="`+src+`"`) {
			return line[strings.LastIndexByte(line, ' ')+1:]
		}
	}
	return ""
}

// TestApproximateCellsThroughGlobal: two cells whose pods publish no KV
// events. A cold prompt goes wherever globald's hashing sends it; the cell
// that served it learns the pod's blocks, its published summary says so,
// and a follow-up with a longer prompt goes through globald back to that
// cell and pod, the probe answering with the approximate match.
func TestApproximateCellsThroughGlobal(t *testing.T) {
	hits := &sync.Map{}
	a, b := startLearningCell(t, "cell-a", cell.PodEventsNone, hits), startLearningCell(t, "cell-b", cell.PodEventsNone, hits)
	dir := &mutableDir{}
	dir.set(a.publishedView(t), b.publishedView(t))
	g := startGlobal(t, dir)
	toks := tokens(31, 64*16)
	first := servedBy(t, g, toks)
	served := a
	if strings.HasPrefix(first, "cell-b") {
		served = b
	}
	// Gossip brings globald the new summaries.
	dir.set(a.publishedView(t), b.publishedView(t))
	if got := served.publishedView(t).Summary.Depth(blockChain(toks)); got < 60 {
		t.Fatalf("the serving cell's summary estimates depth %d for the prompt, want about 64", got)
	}
	longer := append(append([]uint32(nil), toks...), tokens(32, 8*16)...)
	// globald's dry run: the summary names the serving cell, which is
	// probed (a cold prompt is not) and answers with its approximate match.
	_, body := post(t, "http://"+g.HTTPAddr()+"/v1/global/route", map[string]any{"model": "m", "tokenIds": longer})
	var rr struct {
		Cell       string `json:"cell"`
		Probes     int    `json:"probes"`
		Candidates []struct {
			Cell          string `json:"cell"`
			MatchedBlocks int    `json:"matchedBlocks"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal([]byte(body), &rr); err != nil {
		t.Fatalf("global route: %v: %s", err, body)
	}
	matched := 0
	for _, c := range rr.Candidates {
		if c.Cell == served.id {
			matched = c.MatchedBlocks
		}
	}
	if rr.Cell != served.id || rr.Probes < 1 || matched != 64 {
		t.Fatalf("global dry run %s, want %s chosen after a probe matching 64 blocks", body, served.id)
	}
	for i := 0; i < 3; i++ {
		if got := servedBy(t, g, longer); got != first {
			t.Fatalf("follow-up %d served by %s, want %s (its approximate cache)", i, got, first)
		}
	}
	if got := matchSource(t, served, "approximate"); got != "3" {
		t.Fatalf("the serving cell counted %q decisions from the approximate index, want 3", got)
	}
}

// TestSpeculativeEntriesThroughGlobal: pods with events that have sent
// none yet. Two requests with the same new prompt through globald: the
// second finds the first's pod through its speculative entries.
func TestSpeculativeEntriesThroughGlobal(t *testing.T) {
	hits := &sync.Map{}
	a, b := startLearningCell(t, "cell-a", cell.PodEventsExact, hits), startLearningCell(t, "cell-b", cell.PodEventsExact, hits)
	dir := &mutableDir{}
	dir.set(a.publishedView(t), b.publishedView(t))
	g := startGlobal(t, dir)
	toks := tokens(33, 64*16)
	first := servedBy(t, g, toks)
	if got := servedBy(t, g, toks); got != first {
		t.Fatalf("the second request went to %s, want %s", got, first)
	}
	served := a
	if strings.HasPrefix(first, "cell-b") {
		served = b
	}
	if got := matchSource(t, served, "speculative"); got != "1" {
		t.Fatalf("the serving cell counted %q decisions from speculative entries, want 1", got)
	}
}
