package global

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// frozenBound is the first-byte bound (and liveness timeout) of these
// tests.
const frozenBound = 300 * time.Millisecond

// startWatchedGlobal starts a global tier with short watch bounds and the
// given probe deadline.
func startWatchedGlobal(t *testing.T, dir Directory, probeTimeout time.Duration) *Global {
	t.Helper()
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cfg.ProbeTimeout = probeTimeout
	cfg.Choose.RTTWeight = 0
	cfg.Watch.FirstByteTimeout, cfg.Watch.FirstByteTimeoutMax, cfg.Watch.LivenessTimeout = frozenBound, frozenBound, frozenBound
	cfg.Watch.Ejection.BaseEjectionTime, cfg.Watch.Ejection.MaxEjectionTime = 300*time.Millisecond, time.Second
	g, err := New(cfg, dir, nil, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return g
}

// timedPost posts body and returns the response, its body and the time it
// took, bounded by a generous deadline.
func timedPost(t *testing.T, url string, body any) (*http.Response, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp, string(out), time.Since(start)
}

// TestFrozenCellRetriedEjectedAndNotProbed: cell a holds the prefix, but
// its replica is frozen (its HTTP and gRPC sockets accept and never
// answer). Requests go to cell b within the probe deadline plus the
// first-byte bound, a liveness check and one retry; once a is ejected, it
// is neither probed nor tried first, so a request no longer waits for it.
func TestFrozenCellRetriedEjectedAndNotProbed(t *testing.T) {
	const probeTimeout = 4 * time.Second
	hits := &sync.Map{}
	a, b := startTestCell(t, "cell-a", hits), startTestCell(t, "cell-b", hits)
	toks := tokens(9, 32*16)
	a.hold(t, "cell-a-pod0", toks, 32)
	frozen := a.view(t)
	frozen.HTTPAddr, frozen.GRPCAddr = servertest.SilentAddr(t), servertest.SilentAddr(t)
	g := startWatchedGlobal(t, StaticDirectory{frozen, b.view(t)}, probeTimeout)
	url := "http://" + g.HTTPAddr() + "/v1/completions"
	req := map[string]any{"model": "m", "prompt": toks, "max_tokens": 1}

	for i := 0; !g.proxy.Ejected(frozen.HTTPAddr); i++ {
		if i == 5 {
			t.Fatalf("the frozen cell is not ejected after %d requests: %+v", i, g.proxy.WatchStats())
		}
		resp, body, took := timedPost(t, url, req)
		if resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-b" {
			t.Fatalf("request %d: %d %s from %q, want cell-b", i, resp.StatusCode, body, resp.Header.Get(CellHeader))
		}
		if limit := probeTimeout + 2*frozenBound + 3*time.Second; took > limit {
			t.Fatalf("request %d took %v, want at most the probe deadline, the bound, a liveness check and a retry (%v)", i, took, limit)
		}
	}
	timeouts := g.proxy.WatchStats().FirstByteTimeouts
	resp, body, took := timedPost(t, url, req)
	// A probe of the frozen cell would cost the whole probe deadline.
	if resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-b" || took >= probeTimeout || g.proxy.WatchStats().FirstByteTimeouts != timeouts {
		t.Fatalf("with the cell ejected: %d %s from %q after %v, want cell-b without waiting for the frozen cell", resp.StatusCode, body, resp.Header.Get(CellHeader), took)
	}
	_, metrics := getMetrics(t, "http://"+g.HTTPAddr())
	if !strings.Contains(metrics, "cellrouter_global_handoff_ejected 1") {
		t.Errorf("metrics do not show the ejected replica:\n%s", grepLines(metrics, "cellrouter_global_handoff"))
	}
}

// TestCellFrozenMidStreamThroughGlobal: a cell that streams a chunk and
// then stops (its /healthz too) has its stream ended by the global tier
// with an OpenAI error event; it is ejected, and readmitted once it
// answers again.
func TestCellFrozenMidStreamThroughGlobal(t *testing.T) {
	var cell *servertest.Freezable
	cell = servertest.NewFreezable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			return
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		http.NewResponseController(w).Flush()
		cell.Freeze()
		if cell.Gate(r) {
			io.WriteString(w, "data: [DONE]\n\n")
		}
	}))
	view := CellView{ID: "cell-x", HTTPAddr: cell.Addr(), GRPCAddr: servertest.SilentAddr(t), Alive: true}
	g := startWatchedGlobal(t, StaticDirectory{view}, time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, _ := json.Marshal(map[string]any{"model": "m", "prompt": tokens(4, 64), "max_tokens": 4, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+g.HTTPAddr()+"/v1/completions", strings.NewReader(string(b)))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			events = append(events, line)
		}
	}
	resp.Body.Close()
	took := time.Since(start)
	if resp.StatusCode != 200 || len(events) != 2 || !strings.HasPrefix(events[1], `data: {"error":{`) || !strings.Contains(events[1], "upstream_stalled") {
		t.Fatalf("status %d, events %q: want the chunk, then an OpenAI error event", resp.StatusCode, events)
	}
	if took > 2*frozenBound+3*time.Second {
		t.Fatalf("the stalled stream ended after %v, want about %v", took, 2*frozenBound)
	}
	if !g.proxy.Ejected(view.HTTPAddr) {
		t.Fatal("the cell frozen mid-stream was not ejected")
	}
	cell.Thaw()
	waitFor(t, "the thawed cell readmitted", func() bool { return !g.proxy.Ejected(view.HTTPAddr) })
}

// getMetrics reads /metrics (open without API keys).
func getMetrics(t *testing.T, base string) (int, string) {
	t.Helper()
	return get(t, base+"/metrics")
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
