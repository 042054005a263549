package global

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/gossip"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// lastTraceparent maps a test pod's id to the traceparent header of its
// last inference request.
var lastTraceparent sync.Map

// testPod is an instant OpenAI pod that says who answered.
func testPod(t testing.TB, id string, hits *sync.Map) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			return
		case "/v1/models":
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":1700000000,"owned_by":%q}]}`, id)
			return
		}
		io.Copy(io.Discard, r.Body)
		lastTraceparent.Store(id, r.Header.Get("traceparent"))
		n, _ := hits.LoadOrStore(id, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		fmt.Fprintf(w, `{"choices":[{"text":"from %s"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":5}}}`, id)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// testCell is a real cell with two instant pods.
type testCell struct {
	id string
	c  *cell.Cell
}

func startTestCell(t testing.TB, id string, hits *sync.Map, opts ...cell.Option) *testCell {
	t.Helper()
	return startTestCellWith(t, id, hits, nil, opts...)
}

// startTestCellWith starts a test cell whose configuration mod changes
// first (when not nil).
func startTestCellWith(t testing.TB, id string, hits *sync.Map, mod func(*cell.Config), opts ...cell.Option) *testCell {
	t.Helper()
	cfg := cell.DefaultConfig()
	cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, cfg.HealthInterval = id, "127.0.0.1:0", "127.0.0.1:0", 0
	// What a cell holds is what hold says: no speculative entries for the
	// requests the tests send (learned_test.go covers those).
	cfg.Speculative.TTL = 0
	for i := 0; i < 2; i++ {
		pid := fmt.Sprintf("%s-pod%d", id, i)
		cfg.Pods = append(cfg.Pods, cell.PodConfig{ID: pid, Address: testPod(t, pid, hits)})
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := cell.New(cfg, quiet, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &testCell{id: id, c: c}
}

func tokens(salt uint32, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = salt*100003 + uint32(i)
	}
	return out
}

// hold makes pod hold the first blocks of toks in its cell, through the
// cell's event applier.
func (tc *testCell) hold(t testing.TB, pod string, toks []uint32, blocks int) {
	t.Helper()
	h := blockhash.DefaultHasher()
	eng := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	hs := make([]uint64, blocks)
	for i := range hs {
		hs[i] = uint64(eng[i])
	}
	b := &events.Batch{Pod: pod, Model: "m", DPRank: -1, Events: []events.Event{{Kind: events.KindBlockStored, BlockHashes: hs, TokenIDs: toks[:blocks*16], BlockSize: 16}}}
	if err := tc.c.Applier().ApplyBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
}

// summary builds the gossip summary the cell would publish.
func (tc *testCell) summary(t testing.TB) *gossip.Summary {
	t.Helper()
	b, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	if err != nil {
		t.Fatal(err)
	}
	tc.c.Applier().ForEachBlock(func(h index.BlockHash, depth int) { b.Add(h, depth) })
	return b.Build()
}

func (tc *testCell) view(t testing.TB) CellView {
	s := tc.summary(t)
	return CellView{ID: tc.id, HTTPAddr: tc.c.HTTPAddr(), GRPCAddr: tc.c.GRPCAddr(), Alive: true, Summary: s, SummaryBytes: s.SizeBytes()}
}

func startGlobal(t testing.TB, dir Directory, opts ...Option) *Global {
	t.Helper()
	return startGlobalWith(t, dir, nil, opts...)
}

// startGlobalWith starts a global router whose configuration mod changes
// first (when not nil).
func startGlobalWith(t testing.TB, dir Directory, mod func(*Config), opts ...Option) *Global {
	t.Helper()
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	if mod != nil {
		mod(&cfg)
	}
	cfg.ProbeTimeout = 5 * time.Second // a loaded test machine
	// Loopback round trips on a loaded 2-core machine vary by tens of ms
	// (the first probe of a cell also dials it), which at one block per ms
	// outweighs the few blocks these tests' prefixes save: the tests here
	// check where prefixes lead, so the round-trip term is off.
	cfg.Choose.RTTWeight = 0
	g, err := New(cfg, dir, nil, quiet, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

func post(t testing.TB, url string, body any) (*http.Response, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out)
}

// mutableDir is a Directory tests change while the global tier runs.
type mutableDir struct {
	mu    sync.Mutex
	cells []CellView
}

func (d *mutableDir) Cells() []CellView {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]CellView(nil), d.cells...)
}

func (d *mutableDir) set(vs ...CellView) {
	d.mu.Lock()
	d.cells = vs
	d.mu.Unlock()
}

func TestRoutesToTheCellHoldingThePrefix(t *testing.T) {
	hits := &sync.Map{}
	a, b, c := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits), startTestCell(t, "cell-c", hits)
	toks := tokens(1, 64*16)
	b.hold(t, "cell-b-pod1", toks, 48)
	a.hold(t, "cell-a-pod0", toks, 8)
	dir := &mutableDir{}
	dir.set(a.view(t), b.view(t), c.view(t))
	g := startGlobal(t, dir)
	resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 4})
	if resp.StatusCode != 200 || !strings.Contains(body, "from cell-b-pod1") {
		t.Fatalf("got %d %q, want cell-b-pod1", resp.StatusCode, body)
	}
	if got := resp.Header.Get(CellHeader); got != "cell-b" {
		t.Fatalf("%s = %q", CellHeader, got)
	}
	// The dry run explains it: b, the deepest estimate, and the least loaded
	// other cell were probed; b matched 48 blocks and won.
	_, body = post(t, "http://"+g.HTTPAddr()+"/v1/global/route", map[string]any{"model": "m", "tokenIds": toks})
	var rr struct {
		Cell       string `json:"cell"`
		Probes     int    `json:"probes"`
		Candidates []struct {
			Cell          string `json:"cell"`
			MatchedBlocks int    `json:"matchedBlocks"`
		} `json:"candidates"`
	}
	json.Unmarshal([]byte(body), &rr)
	if rr.Cell != "cell-b" || rr.Probes != 2 || len(rr.Candidates) != 2 || rr.Candidates[0].Cell != "cell-b" || rr.Candidates[0].MatchedBlocks != 48 {
		t.Fatalf("route dry run %s", body)
	}
}

func TestColdPromptsMeetTheirCache(t *testing.T) {
	hits := &sync.Map{}
	var views []CellView
	for i := 0; i < 4; i++ {
		views = append(views, startTestCell(t, fmt.Sprintf("cell-%d", i), hits).view(t))
	}
	g := startGlobal(t, StaticDirectory(views))
	seen := map[string]bool{}
	for i := 0; i < 5; i++ {
		resp, _ := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": tokens(7, 256), "max_tokens": 1})
		seen[resp.Header.Get(CellHeader)] = true
	}
	if len(seen) > 2 {
		t.Fatalf("one cold prompt went to %d cells: %v (want at most the two choices)", len(seen), seen)
	}
	spread := map[string]bool{}
	for i := 0; i < 40; i++ {
		resp, _ := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": tokens(uint32(100+i), 256), "max_tokens": 1})
		spread[resp.Header.Get(CellHeader)] = true
	}
	if len(spread) < 3 {
		t.Fatalf("40 distinct cold prompts used only %v", spread)
	}
}

func TestDeadAndDrainingCellsLeaveAndRetries(t *testing.T) {
	hits := &sync.Map{}
	a, b := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits)
	toks := tokens(3, 32*16)
	a.hold(t, "cell-a-pod0", toks, 32)
	va, vb := a.view(t), b.view(t)
	dir := &mutableDir{}
	dir.set(va, vb)
	g := startGlobal(t, dir)
	url := "http://" + g.HTTPAddr()

	// Cell a's data plane is unreachable but it still looks best: the
	// hand-off retries on b before any byte, and the client sees no error.
	broken := va
	broken.HTTPAddr = "127.0.0.1:1"
	dir.set(broken, vb)
	resp, body := post(t, url+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-b" {
		t.Fatalf("got %d %s from %q, want a retry on cell-b", resp.StatusCode, body, resp.Header.Get(CellHeader))
	}
	// Dead: a leaves the candidate set.
	dead := va
	dead.Alive = false
	dir.set(dead, vb)
	resp, _ = post(t, url+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.Header.Get(CellHeader) != "cell-b" {
		t.Fatalf("dead cell still chosen")
	}
	// Draining: the same through the control plane.
	dir.set(va, vb)
	resp, body = post(t, url+"/v1/global/cells/cell-a:drain", map[string]any{})
	if resp.StatusCode != 200 || !strings.Contains(body, `"draining":true`) {
		t.Fatalf("drain: %d %s", resp.StatusCode, body)
	}
	resp, _ = post(t, url+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.Header.Get(CellHeader) != "cell-b" {
		t.Fatalf("draining cell still chosen")
	}
	post(t, url+"/v1/global/cells/cell-a:drain", map[string]any{"cancel": true})
	resp, _ = post(t, url+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.Header.Get(CellHeader) != "cell-a" {
		t.Fatalf("undrained holder not chosen again")
	}
}

func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
