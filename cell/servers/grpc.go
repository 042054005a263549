package servers

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/cellrouter/cellrouter/cell/telemetry"
)

// NewGRPC returns a daemon's gRPC server: every call is traced (a server
// span continuing the caller's W3C trace context, on provider tp, or on the
// global provider when tp is nil).
func NewGRPC(tp trace.TracerProvider) *grpc.Server {
	opts := []otelgrpc.Option{otelgrpc.WithPropagators(telemetry.Propagator)}
	if tp != nil {
		opts = append(opts, otelgrpc.WithTracerProvider(tp))
	}
	s := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(opts...)))
	return s
}
