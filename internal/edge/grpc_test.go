package edge

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// principalHealth is a health service whose Check answers SERVING only
// when the guard put a principal in its context.
type principalHealth struct {
	*health.Server
}

func (p principalHealth) Check(ctx context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if _, ok := PrincipalFrom(ctx); !ok {
		return nil, status.Error(codes.Internal, "no principal")
	}
	return p.Server.Check(ctx, req)
}

// guardedGRPC serves the health service behind g's interceptors and l's
// options (Check needs scope check, Watch, a stream, scope watch) and
// returns a client on a connection of its own.
func guardedGRPC(t *testing.T, g *Guard, l Limits, m *Metrics, check, watch auth.Scope) healthpb.HealthClient {
	c, _ := guardedGRPCAddr(t, g, l, m, check, watch)
	return c
}

func guardedGRPCAddr(t *testing.T, g *Guard, l Limits, m *Metrics, check, watch auth.Scope) (healthpb.HealthClient, func() healthpb.HealthClient) {
	t.Helper()
	scopes := Scopes{"/grpc.health.v1.Health/Check": check, "/grpc.health.v1.Health/Watch": watch}
	opts := append(GRPCServerOptions(l, m), grpc.ChainUnaryInterceptor(g.UnaryInterceptor(scopes)),
		grpc.ChainStreamInterceptor(g.StreamInterceptor(scopes)))
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, principalHealth{health.NewServer()})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	dial := func() healthpb.HealthClient {
		conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return healthpb.NewHealthClient(conn)
	}
	return dial(), dial
}

// TestGRPCRejections checks every rejection path of a gRPC method behind
// the guard, unary and streaming: the codes a gRPC client expects.
func TestGRPCRejections(t *testing.T) {
	g, m, _ := newTestGuard(t, GuardConfig{TrustPeers: true})
	c := guardedGRPC(t, g, DefaultLimits(), m, auth.ScopeAdmin, auth.ScopeInference)
	tests := []struct {
		name string
		md   []string // outgoing metadata pairs
		want codes.Code
	}{
		{"no key", nil, codes.Unauthenticated},
		{"unknown key", []string{"authorization", "Bearer nope"}, codes.Unauthenticated},
		{"not bearer", []string{"authorization", "Basic eDp5"}, codes.Unauthenticated},
		{"two keys", []string{"authorization", "Bearer ops-key", "authorization", "Bearer lab-key"}, codes.Unauthenticated},
		{"key without the scope", []string{"authorization", "Bearer acme-key"}, codes.PermissionDenied},
		{"a tenant named without a certificate", []string{"x-cellrouter-tenant", "ops"}, codes.Unauthenticated},
		{"admin key", []string{"authorization", "Bearer ops-key"}, codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			ctx = metadata.AppendToOutgoingContext(ctx, tt.md...)
			_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
			if got := status.Code(err); got != tt.want {
				t.Fatalf("Check: got %v (%v), want %v", got, err, tt.want)
			}
		})
	}
	// The stream needs inference: acme may (once at a time), ops may not.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := c.Watch(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer ops-key"), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("Watch with an admin key: got %v, want PermissionDenied", err)
	}
	wctx, wcancel := context.WithCancel(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer acme-key"))
	st, err = c.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatalf("Watch with an inference key: %v", err)
	}
	// A second stream of acme while the first is open: its limit of one.
	st2, err := c.Watch(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer acme-key"), &healthpb.HealthCheckRequest{})
	if err == nil {
		_, err = st2.Recv()
	}
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second acme stream: got %v, want ResourceExhausted", err)
	}
	wcancel()
}

// TestGRPCStreamsLimit checks the server-wide limit of calls: a call on
// another connection past it is refused (on one connection, HTTP/2's
// stream limit makes the client wait instead).
func TestGRPCStreamsLimit(t *testing.T) {
	l := DefaultLimits()
	l.MaxConcurrentStreams = 1
	m := NewMetrics(prometheus.NewRegistry())
	c, dial := guardedGRPCAddr(t, NewGuard(GuardConfig{}, m), l, m, 0, 0)
	c2 := dial()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	wctx, wcancel := context.WithCancel(ctx)
	st, err := c.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	_, err = c2.Check(ctx, &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("a call past the limit: got %v, want Unavailable", err)
	}
	wcancel()
	waitCounter(t, "streams hits", m.limitHits.WithLabelValues(LimitStreams), 1)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := c.Check(ctx, &healthpb.HealthCheckRequest{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("the limit did not free: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestGRPCMessageSize checks that a message over the size limit is refused
// and counted.
func TestGRPCMessageSize(t *testing.T) {
	l := DefaultLimits()
	l.MaxBodyBytes = 1024
	m := NewMetrics(prometheus.NewRegistry())
	c := guardedGRPC(t, NewGuard(GuardConfig{}, m), l, m, 0, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{Service: string(make([]byte, 2000))})
	if status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("got %v, want ResourceExhausted", err)
	}
	waitCounter(t, "body_size hits", m.limitHits.WithLabelValues(LimitBodySize), 1)
}
