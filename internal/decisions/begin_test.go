package decisions

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

func TestBeginEnd(t *testing.T) {
	var off *Ring
	if off.Begin(context.Background(), httptest.NewRequest("POST", "/", nil), time.Now(), "m", "acme") != nil {
		t.Fatal("a disabled ring begins no record")
	}
	off.End(nil, time.Now()) // nothing to add, no panic

	r := New(Config{Size: 2, TopK: 1})
	req := httptest.NewRequest("POST", "/", nil)
	req.Header.Set(RequestIDHeader, "req-1")
	tid := trace.TraceID{1, 2, 3}
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{9}}))
	start := time.Now().Add(-time.Second)
	rec := r.Begin(ctx, req, start, "m", "acme")
	if rec.ID != "req-1" || rec.TraceID != tid.String() || rec.Model != "m" || rec.Tenant != "acme" || !rec.Time.Equal(start) {
		t.Fatalf("begun %+v", rec)
	}
	rec.Status = 200
	r.End(rec, start)
	got, ok := r.Get("req-1")
	if !ok || got.Status != 200 || got.Duration < time.Second {
		t.Fatalf("ended %+v (found %v), want status 200 and its duration", got, ok)
	}
}
