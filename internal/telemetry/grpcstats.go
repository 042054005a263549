package telemetry

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// TracingEnabled reports whether spans of tp may record: tp is set, or
// the global provider is no longer the API's placeholder (see
// Tracer.Enabled).
func TracingEnabled(tp trace.TracerProvider) bool {
	return tp != nil || otel.GetTracerProvider() != defaultProvider
}

// GatedStats wraps a gRPC stats handler (otelgrpc's) so that it runs only
// while TracingEnabled(tp), decided per RPC: without a provider the
// handler would build a span, its attributes and its events for every
// call (the global tier's probes, the cell's answers) and record nothing.
// A client call skipped this way still carries the W3C trace context of
// its caller's context, as the handler's own placeholder span would, so a
// cell that traces continues the client's trace.
func GatedStats(h stats.Handler, tp trace.TracerProvider, client bool) stats.Handler {
	return &gatedStats{h: h, tp: tp, client: client}
}

type gatedStats struct {
	h      stats.Handler
	tp     trace.TracerProvider
	client bool
}

// skippedKey marks the context of an RPC the handler did not tag.
type skippedKey struct{}

func (g *gatedStats) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if TracingEnabled(g.tp) {
		return g.h.TagRPC(ctx, info)
	}
	if g.client && trace.SpanContextFromContext(ctx).IsValid() {
		md, _ := metadata.FromOutgoingContext(ctx)
		md = md.Copy()
		Propagator.Inject(ctx, metadataCarrier(md))
		ctx = metadata.NewOutgoingContext(ctx, md)
	}
	return context.WithValue(ctx, skippedKey{}, true)
}

func (g *gatedStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if ctx.Value(skippedKey{}) != nil {
		return
	}
	g.h.HandleRPC(ctx, s)
}

func (g *gatedStats) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return g.h.TagConn(ctx, info)
}

func (g *gatedStats) HandleConn(ctx context.Context, s stats.ConnStats) { g.h.HandleConn(ctx, s) }

// metadataCarrier adapts gRPC metadata to a propagation carrier.
type metadataCarrier metadata.MD

var _ propagation.TextMapCarrier = metadataCarrier(nil)

func (c metadataCarrier) Get(key string) string {
	if v := metadata.MD(c).Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

func (c metadataCarrier) Set(key, value string) { metadata.MD(c).Set(key, value) }

func (c metadataCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}
