package servers

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/cellrouter/cellrouter/cell/telemetry"
)

// NewGRPC returns a daemon's gRPC server: every call is traced (a server
// span continuing the caller's W3C trace context, on provider tp, or on the
// global provider when tp is nil), and the server answers gRPC server
// reflection (v1 and v1alpha), so generic clients such as grpcurl can list
// and describe the services registered on it later.
func NewGRPC(tp trace.TracerProvider) *grpc.Server {
	opts := []otelgrpc.Option{otelgrpc.WithPropagators(telemetry.Propagator)}
	if tp != nil {
		opts = append(opts, otelgrpc.WithTracerProvider(tp))
	}
	s := grpc.NewServer(grpc.StatsHandler(otelgrpc.NewServerHandler(opts...)))
	reflection.Register(s)
	return s
}
