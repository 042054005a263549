package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/telemetry/otlptest"
)

// tracedPod is an OpenAI pod that tokenizes by bytes and remembers the
// traceparent of its last completion request.
type tracedPod struct {
	mu          sync.Mutex
	traceparent string
}

func (p *tracedPod) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health":
	case "/tokenize":
		var req struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		ids := make([]int, len(req.Prompt))
		for i := range req.Prompt {
			ids[i] = int(req.Prompt[i])
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": ids, "count": len(ids), "max_model_len": 4096})
	case "/v1/completions":
		p.mu.Lock()
		p.traceparent = r.Header.Get("traceparent")
		p.mu.Unlock()
		fmt.Fprint(w, `{"choices":[{"text":"hi"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	default: // the cell's other calls (its engine-metrics scrape) carry no request's trace
		http.NotFound(w, r)
	}
}

// TestRunExportsTracesUnderTheCellsIdentity is the regression test of
// celld exiting at start whenever OTEL_EXPORTER_OTLP_ENDPOINT was set
// ("conflicting Schema URL"). It runs celld with the endpoint pointing at
// an in-process OTLP receiver, sends a text prompt and checks what arrives:
// the request span under celld's identity (service.instance.id and
// cellrouter.cell are the cell id), the tokenize call as a child of the
// prepare stage, and the upstream call, whose context reached the pod.
func TestRunExportsTracesUnderTheCellsIdentity(t *testing.T) {
	rcv := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	pod := &tracedPod{}
	srv := httptest.NewServer(pod)
	t.Cleanup(srv.Close)
	conf := filepath.Join(t.TempDir(), "celld.yaml")
	yaml := fmt.Sprintf("pods:\n  - id: pod-0\n    address: %s\n", strings.TrimPrefix(srv.URL, "http://"))
	if err := os.WriteFile(conf, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}

	logs, errc := &servertest.LogBuffer{}, make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		errc <- run(ctx, []string{"--config", conf, "--cell-id", "cell-7", "--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"}, io.Discard, logs)
	}()
	re := regexp.MustCompile(`"celld serving" .*?http=(\S+)`)
	var addr string
	for deadline := time.Now().Add(60 * time.Second); addr == ""; {
		if m := re.FindStringSubmatch(logs.String()); m != nil {
			addr = m[1]
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("run returned %v at start; logs:\n%s", err, logs)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("celld did not start; logs:\n%s", logs)
		}
	}
	const traceID, clientSpan = "5b8efff798038103d269b633813fc60c", "eee19b7ec3c1b174"
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/completions",
		strings.NewReader(`{"model":"m","prompt":"hello, traced world","max_tokens":1}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+traceID+"-"+clientSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("run did not return after cancel")
	}

	spans := rcv.Trace(traceID)
	t.Logf("trace:\n%s", otlptest.Tree(spans))
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		if s.Service() != "celld" || s.Instance() != "cell-7" || s.Resource["cellrouter.cell"] != "cell-7" {
			t.Errorf("span %s exported as %s %s cell %q, want celld cell-7", s.Name, s.Service(), s.Instance(), s.Resource["cellrouter.cell"])
		}
		byName[s.Name] = s
	}
	tests := []struct{ span, parent string }{
		{"cell.request", ""},
		{"cell.stage.prepare", "cell.request"},
		{"cell.tokenize", "cell.stage.prepare"},
		{"cell.upstream", "cell.request"},
	}
	for _, tt := range tests {
		s, ok := byName[tt.span]
		if !ok {
			t.Errorf("no %s span exported", tt.span)
			continue
		}
		want := clientSpan
		if tt.parent != "" {
			want = byName[tt.parent].SpanID
		}
		if s.ParentID != want {
			t.Errorf("%s has parent %s, want %s (%s)", tt.span, s.ParentID, want, tt.parent)
		}
	}
	if got := byName["cell.tokenize"].Attrs["cellrouter.tokenizer.kind"]; got != "remote" {
		t.Errorf("tokenizer kind %q, want remote", got)
	}
	pod.mu.Lock()
	got := pod.traceparent
	pod.mu.Unlock()
	if want := "00-" + traceID + "-" + byName["cell.upstream"].SpanID + "-01"; got != want {
		t.Errorf("pod got traceparent %q, want %q", got, want)
	}
}
