package telemetry

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// countingStats is a stats handler that counts what reaches it.
type countingStats struct{ tags, handled int }

func (c *countingStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context {
	c.tags++
	return ctx
}
func (c *countingStats) HandleRPC(context.Context, stats.RPCStats) { c.handled++ }
func (c *countingStats) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (c *countingStats) HandleConn(context.Context, stats.ConnStats) {}

func TestGatedStats(t *testing.T) {
	// A caller's trace context, as a request's traceparent gives it.
	parent := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	info := &stats.RPCTagInfo{FullMethodName: "/x.Y/Z"}

	t.Run("no provider", func(t *testing.T) {
		inner := &countingStats{}
		h := GatedStats(inner, nil, true)
		ctx := h.TagRPC(parent, info)
		h.HandleRPC(ctx, &stats.End{})
		if inner.tags != 0 || inner.handled != 0 {
			t.Errorf("the handler ran without a provider: %+v", inner)
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		if got := md.Get("traceparent"); len(got) != 1 || got[0] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
			t.Errorf("outgoing traceparent %q, want the caller's", got)
		}
		// Without a caller's context nothing is injected, and the server
		// side never injects.
		for _, c := range []struct {
			ctx    context.Context
			client bool
		}{{context.Background(), true}, {parent, false}} {
			ctx := GatedStats(inner, nil, c.client).TagRPC(c.ctx, info)
			if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get("traceparent")) > 0 {
				t.Errorf("client=%v: injected %q", c.client, md.Get("traceparent"))
			}
		}
	})
	t.Run("provider", func(t *testing.T) {
		inner := &countingStats{}
		tp := sdktrace.NewTracerProvider()
		defer tp.Shutdown(context.Background())
		h := GatedStats(inner, tp, true)
		ctx := h.TagRPC(parent, info)
		h.HandleRPC(ctx, &stats.End{})
		if inner.tags != 1 || inner.handled != 1 {
			t.Errorf("the handler got %+v with a provider, want every call", inner)
		}
		if !TracingEnabled(tp) || trace.SpanContextFromContext(parent).TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Error("set-up")
		}
	})
}
