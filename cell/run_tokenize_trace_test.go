package cell

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
)

// recordingCell starts a cell over pods whose spans go to its own recorder.
func recordingCell(t *testing.T, pods []*fakePod, mod func(*Config)) (*Cell, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	cfg := testConfig()
	for _, p := range pods {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: p.id, Address: p.addr(), KVBlocks: 10000})
	}
	if mod != nil {
		mod(&cfg)
	}
	c := startCell(t, cfg, WithTracerProvider(tp))
	waitFor(t, "healthz", func() bool { code, _ := get(t, "http://"+c.HTTPAddr()+"/healthz"); return code == 200 })
	return c, rec
}

func postJSON(t *testing.T, url string, body any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// spanAttrs renders a span's attributes as strings.
func spanAttrs(s sdktrace.ReadOnlySpan) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes() {
		m[string(kv.Key)] = kv.Value.String()
	}
	return m
}

// TestTokenizeSpan checks that tokenizing a text prompt is a span of its
// own, cell.tokenize, a child of the prepare stage's span, which says which
// tokenizer answered, how many tokens it made and whether the cell's cache
// of remote answers did; and that a token-id prompt makes no such span.
func TestTokenizeSpan(t *testing.T) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 10)
	const tokenizerJSON = "../cachekey/tokenizer/testdata/gpt2.tokenizer.json"
	bpe, err := tokenizer.LoadFile(tokenizerJSON, tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	localIDs, err := bpe.Encode(context.Background(), text, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	pods := []*fakePod{newFakePod(t, "a")}
	remote, remoteRec := recordingCell(t, pods, nil)
	local, localRec := recordingCell(t, pods, func(c *Config) { c.Routing.TokenizerJSON = tokenizerJSON })
	tests := []struct {
		name      string
		c         *Cell
		rec       *tracetest.SpanRecorder
		prompt    any
		want      map[string]string // attributes of cell.tokenize; nil: no such span
		tokenizes int               // the pod's /tokenize calls after the request
	}{
		{name: "remote", c: remote, rec: remoteRec, prompt: text, tokenizes: 1, want: map[string]string{
			"cellrouter.tokenizer.kind": "remote", "cellrouter.tokenizer.cache_hit": "false",
			"cellrouter.tokens": fmt.Sprint(len(text)), "cellrouter.pod": "a", "cellrouter.cell": "cell-0", "cellrouter.chat": "false"}},
		{name: "remote again, from the cache", c: remote, rec: remoteRec, prompt: text, tokenizes: 1, want: map[string]string{
			"cellrouter.tokenizer.kind": "remote", "cellrouter.tokenizer.cache_hit": "true", "cellrouter.tokens": fmt.Sprint(len(text))}},
		{name: "local", c: local, rec: localRec, prompt: text, tokenizes: 1, want: map[string]string{
			"cellrouter.tokenizer.kind": "local", "cellrouter.tokenizer.cache_hit": "false", "cellrouter.tokens": fmt.Sprint(len(localIDs))}},
		{name: "token ids", c: remote, rec: remoteRec, prompt: []int{1, 2, 3}, tokenizes: 1},
	}
	for _, tt := range tests {
		tt.rec.Reset()
		code, body := postJSON(t, "http://"+tt.c.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": tt.prompt, "max_tokens": 1})
		if code != 200 {
			t.Fatalf("%s: status %d %s", tt.name, code, body)
		}
		var prepare, tokenize sdktrace.ReadOnlySpan
		n := 0
		for _, s := range tt.rec.Ended() {
			switch s.Name() {
			case "cell.stage.prepare":
				prepare = s
			case "cell.tokenize":
				tokenize = s
				n++
			}
		}
		if tt.want == nil {
			if n != 0 {
				t.Errorf("%s: got %d cell.tokenize spans, want none", tt.name, n)
			}
			continue
		}
		if n != 1 || prepare == nil {
			t.Fatalf("%s: got %d cell.tokenize spans and prepare %v, want one under a prepare span", tt.name, n, prepare != nil)
		}
		if got, want := tokenize.Parent().SpanID(), prepare.SpanContext().SpanID(); got != want {
			t.Errorf("%s: cell.tokenize parent %s, want the prepare span %s", tt.name, got, want)
		}
		got := spanAttrs(tokenize)
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", tt.name, k, got[k], v, got)
			}
		}
		pods[0].mu.Lock()
		calls := pods[0].tokenizes
		pods[0].mu.Unlock()
		if calls != tt.tokenizes {
			t.Errorf("%s: the pod answered %d /tokenize calls, want %d", tt.name, calls, tt.tokenizes)
		}
	}
}

// TestTokenizeSpanRecordsFailure checks that a tokenization that fails (no
// healthy pod to ask) marks its span as an error.
func TestTokenizeSpanRecordsFailure(t *testing.T) {
	p := newFakePod(t, "a")
	c, rec := recordingCell(t, []*fakePod{p}, nil)
	p.srv.Close() // the pod is gone: /tokenize fails
	code, _ := postJSON(t, "http://"+c.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": "hello", "max_tokens": 1})
	if code == 200 {
		t.Fatal("a text prompt was served with no pod to tokenize it")
	}
	for _, s := range rec.Ended() {
		if s.Name() == "cell.tokenize" {
			if s.Status().Code.String() != "Error" || len(s.Events()) == 0 {
				t.Errorf("cell.tokenize status %v events %d, want an error with the exception event", s.Status(), len(s.Events()))
			}
			if got := spanAttrs(s)["cellrouter.tokenizer.kind"]; got != "remote" {
				t.Errorf("kind %q, want remote", got)
			}
			return
		}
	}
	t.Fatal("no cell.tokenize span")
}
