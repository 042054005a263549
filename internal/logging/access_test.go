package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
)

func TestAccessLogOff(t *testing.T) {
	info := slog.New(slog.NewJSONHandler(io.Discard, nil))
	warn := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	for name, a := range map[string]*AccessLog{
		"disabled":  NewAccessLog(info, "cell", "c", AccessConfig{Enabled: false, Sample: 1}),
		"sample 0":  NewAccessLog(info, "cell", "c", AccessConfig{Enabled: true, Sample: 0}),
		"warn only": NewAccessLog(warn, "cell", "c", DefaultAccessConfig()),
	} {
		if a != nil {
			t.Errorf("%s: got an access log, want nil", name)
		}
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
		w, e := a.Begin(context.Background(), rec, r)
		if w != http.ResponseWriter(rec) || e != nil {
			t.Errorf("%s: Begin wrapped the writer or made an entry", name)
		}
		e.SetModel("m") // a nil entry ignores calls
		e.SetDecision("exact", time.Millisecond, 3)
		e.End()
		if r.Header.Get(RequestIDHeader) != "" {
			t.Errorf("%s: set a request id on a request not logged", name)
		}
	}
	if err := (AccessConfig{Enabled: true, Sample: 1.5}).Validate(); err == nil {
		t.Error("sample 1.5 validated")
	}
}

func TestAccessLineFields(t *testing.T) {
	var buf bytes.Buffer
	a := NewAccessLog(slog.New(slog.NewJSONHandler(&buf, nil)), "cell", "cell-7", DefaultAccessConfig())
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
	r = r.WithContext(edge.WithPrincipal(r.Context(), auth.Principal{Tenant: &auth.Tenant{Name: "acme"}}))
	rec := httptest.NewRecorder()
	w, e := a.Begin(ctx, rec, r)
	if e == nil {
		t.Fatal("sample 1 made no entry")
	}
	id := r.Header.Get(RequestIDHeader)
	if len(id) != 24 {
		t.Fatalf("made-up request id %q, want 24 hex digits set on the request", id)
	}
	e.SetModel("llama")
	e.SetDecision("speculative", 1500*time.Microsecond, 12)
	w.Header().Set(podHeader, "pod-3")
	w.Header().Set(matchedHeader, "9")
	w.WriteHeader(http.StatusTeapot)
	w.Write([]byte("hello"))
	w.(http.Flusher).Flush()
	if !rec.Flushed || rec.Body.String() != "hello" || rec.Code != http.StatusTeapot {
		t.Errorf("the writer did not pass through: flushed %v, body %q, code %d", rec.Flushed, rec.Body.String(), rec.Code)
	}
	e.End()
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("line %q: %v", buf.String(), err)
	}
	want := map[string]any{
		"level": "INFO", "msg": "access", "tier": "cell", "request_id": id, "tenant": "acme", "model": "llama",
		"endpoint": "/v1/chat/completions", "path": "speculative", "cell": "cell-7", "pod": "pod-3",
		"blocks": 12.0, "matched_blocks": 9.0, "status": 418.0, "bytes": 5.0, "decision_ms": 1.5,
		"trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
	}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	fb, _ := m["first_byte_ms"].(float64)
	total, _ := m["total_ms"].(float64)
	if fb < 0 || total < fb {
		t.Errorf("first byte %v ms, total %v ms: want 0 <= first byte <= total", fb, total)
	}

	// The client's request id is kept; a handler that wrote nothing
	// answered 200.
	buf.Reset()
	r = httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	r.Header.Set(RequestIDHeader, "client-1")
	_, e = a.Begin(context.Background(), httptest.NewRecorder(), r)
	e.End()
	m = nil
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if m["request_id"] != "client-1" || m["status"] != 200.0 || m["trace_id"] != "" || m["first_byte_ms"] != 0.0 {
		t.Errorf("got %v, want request id client-1, status 200, no trace id, no first byte", m)
	}
}

// TestAccessSampling checks the sampled share against the configured one
// over many requests (a binomial of 20000 draws: the bound is over ten
// standard deviations wide).
func TestAccessSampling(t *testing.T) {
	a := NewAccessLog(slog.New(slog.NewJSONHandler(io.Discard, nil)), "global", "", AccessConfig{Enabled: true, Sample: 0.3})
	const n = 20000
	got := 0
	for range n {
		r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
		if _, e := a.Begin(context.Background(), httptest.NewRecorder(), r); e != nil {
			got++
		}
	}
	if share := float64(got) / n; share < 0.27 || share > 0.33 {
		t.Errorf("sampled %d of %d (%.3f), want about 0.3", got, n, share)
	}
}

// BenchmarkAccessLog measures what the access log adds to a request: off
// (or not sampled), and sampled with a JSON line to a discarding writer.
func BenchmarkAccessLog(b *testing.B) {
	r := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
	r.Header.Set(RequestIDHeader, "client-1")
	rec := httptest.NewRecorder()
	for _, bc := range []struct {
		name string
		a    *AccessLog
	}{
		{"off", nil},
		{"sampled", NewAccessLog(slog.New(slog.NewJSONHandler(io.Discard, nil)), "cell", "c", DefaultAccessConfig())},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, e := bc.a.Begin(context.Background(), rec, r)
				e.SetModel("m")
				e.SetDecision("exact", time.Millisecond, 8)
				w.Header().Get(podHeader)
				e.End()
			}
		})
	}
}
