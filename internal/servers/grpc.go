package servers

import (
	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/reflection"

	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// NewGRPC returns a daemon's gRPC server: every call is traced (a server
// span continuing the caller's W3C trace context, on provider tp, or on the
// global provider when tp is nil), and the server answers gRPC server
// reflection (v1 and v1alpha), so generic clients such as grpcurl can list
// and describe the services registered on it later. opts add the daemon's
// own options (TLS credentials, limits, interceptors).
func NewGRPC(tp trace.TracerProvider, opts ...grpc.ServerOption) *grpc.Server {
	topts := []otelgrpc.Option{otelgrpc.WithPropagators(telemetry.Propagator)}
	if tp != nil {
		topts = append(topts, otelgrpc.WithTracerProvider(tp))
	}
	// The tracing handler runs only while a provider is installed (see
	// telemetry.GatedStats): otherwise it builds spans that record nothing
	// for every call.
	s := grpc.NewServer(append([]grpc.ServerOption{grpc.StatsHandler(telemetry.GatedStats(otelgrpc.NewServerHandler(topts...), tp, false))}, opts...)...)
	reflection.Register(s)
	return s
}
