package global

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/api"
	"github.com/cellrouter/cellrouter/api/apitest"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
)

// lockedBuffer is a log sink safe for the servers' goroutines and the
// test's reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// accessLines returns the JSON access lines written so far.
func (l *lockedBuffer) accessLines(t testing.TB) []map[string]any {
	t.Helper()
	l.mu.Lock()
	data := append([]byte(nil), l.b.Bytes()...)
	l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if m["msg"] == "access" {
			out = append(out, m)
		}
	}
	return out
}

// waitAccess polls until n access lines are written.
func (l *lockedBuffer) waitAccess(t testing.TB, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		lines := l.accessLines(t)
		if len(lines) >= n {
			return lines
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d access lines, want %d", len(lines), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkFields compares the line's fields with want (numbers as JSON
// decodes them).
func checkFields(t testing.TB, who string, line, want map[string]any) {
	t.Helper()
	for k, v := range want {
		if fmt.Sprint(line[k]) != fmt.Sprint(v) {
			t.Errorf("%s access line: %s = %v, want %v (line %v)", who, k, line[k], v, line)
		}
	}
}

// TestAccessLogAtBothTiers sends a request through globald and a cell
// logging JSON and checks the access and decision line each tier writes:
// the same request and trace ids, the route path, cell, pod, matched
// blocks, status and durations; and a refusal's line.
func TestAccessLogAtBothTiers(t *testing.T) {
	hits := &sync.Map{}
	var cellLog, globalLog lockedBuffer
	jsonTo := func(w *lockedBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }
	a := startTestCell(t, "cell-a", hits)
	// cell-b logs JSON to cellLog.
	cfg := cell.DefaultConfig()
	cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, cfg.HealthInterval = "cell-b", "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.Speculative.TTL = 0
	for i := 0; i < 2; i++ {
		pid := fmt.Sprintf("cell-b-pod%d", i)
		cfg.Pods = append(cfg.Pods, cell.PodConfig{ID: pid, Address: testPod(t, pid, hits)})
	}
	c, err := cell.New(cfg, jsonTo(&cellLog))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	b := &testCell{id: "cell-b", c: c}

	toks := tokens(3, 64*16)
	b.hold(t, "cell-b-pod1", toks, 48)
	dir := &mutableDir{}
	dir.set(a.view(t), b.view(t))
	gcfg := DefaultConfig()
	gcfg.HTTPAddr, gcfg.GRPCAddr, gcfg.ProbeTimeout, gcfg.Choose.RTTWeight = "127.0.0.1:0", "127.0.0.1:0", 5*time.Second, 0
	g, err := New(gcfg, dir, nil, jsonTo(&globalLog))
	if err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithCancel(context.Background())
	gdone := make(chan error, 1)
	go func() { gdone <- g.Run(gctx) }()
	t.Cleanup(func() { gcancel(); <-gdone })

	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 4})
	req, _ := http.NewRequest(http.MethodPost, "http://"+g.HTTPAddr()+"/v1/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "req-42")
	req.Header.Set("Traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get(CellHeader) != "cell-b" {
		t.Fatalf("got %d from %q, want 200 from cell-b", resp.StatusCode, resp.Header.Get(CellHeader))
	}

	gl := globalLog.waitAccess(t, 1)[0]
	checkFields(t, "global", gl, map[string]any{
		"level": "INFO", "tier": "global", "request_id": "req-42", "model": "m", "endpoint": "/v1/completions",
		"path": "summary_tokens", "cell": "cell-b", "pod": "cell-b-pod1", "blocks": 64, "matched_blocks": 48,
		"status": 200, "trace_id": traceID, "tenant": "",
	})
	cl := cellLog.waitAccess(t, 1)[0]
	checkFields(t, "cell", cl, map[string]any{
		"level": "INFO", "tier": "cell", "request_id": "req-42", "model": "m", "endpoint": "/v1/completions",
		"path": "exact", "cell": "cell-b", "pod": "cell-b-pod1", "blocks": 64, "matched_blocks": 48,
		"status": 200, "trace_id": traceID,
	})
	for who, l := range map[string]map[string]any{"global": gl, "cell": cl} {
		dec, _ := l["decision_ms"].(float64)
		fb, _ := l["first_byte_ms"].(float64)
		total, _ := l["total_ms"].(float64)
		if dec <= 0 || fb <= 0 || total < fb || total < dec {
			t.Errorf("%s durations: decision %v, first byte %v, total %v ms: want 0 < decision, 0 < first byte <= total", who, dec, fb, total)
		}
	}

	// A refusal has its line too, without a route, a cell or a pod.
	resp, _ = post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m"})
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("no prompt: got %d, want 400", resp.StatusCode)
	}
	lines := globalLog.waitAccess(t, 2)
	checkFields(t, "refusal", lines[1], map[string]any{"status": 400, "path": "", "cell": "", "pod": "", "matched_blocks": -1})
	if id, _ := lines[1]["request_id"].(string); len(id) != 24 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Errorf("made-up request id %q, want 24 hex digits", id)
	}
}

// TestGlobalServesItsOpenAPIDocument fetches the document a running
// globald serves and checks it: title, the build's version, the bearer
// scheme, OpenAI's error body and the data plane.
func TestGlobalServesItsOpenAPIDocument(t *testing.T) {
	g := startGlobal(t, &mutableDir{})
	resp, err := http.Get("http://" + g.HTTPAddr() + api.OpenAPIPath("global"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s", api.OpenAPIPath("global"), resp.StatusCode, body)
	}
	apitest.CheckDocument(t, "global", buildinfo.Read().Version, body)
}
