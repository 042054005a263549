package epp

import (
	"context"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

func TestHealthServices(t *testing.T) {
	var ready atomic.Bool
	h := NewHealth(ready.Load)
	s, err := NewServer(DefaultConfig(), PickerFunc(func(ctx context.Context, r *Request) (*Result, error) { return nil, ErrNoEndpoint }))
	if err != nil {
		t.Fatal(err)
	}
	hc := healthpb.NewHealthClient(serve(t, s, h))
	check := func(svc string) healthpb.HealthCheckResponse_ServingStatus {
		t.Helper()
		r, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("check %q: %v", svc, err)
		}
		return r.GetStatus()
	}
	serving, notServing := healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING
	for svc, want := range map[string]healthpb.HealthCheckResponse_ServingStatus{LivenessService: serving, ReadinessService: notServing, ExtProcService: notServing} {
		if got := check(svc); got != want {
			t.Fatalf("%s before ready: %v, want %v", svc, got, want)
		}
	}
	ready.Store(true)
	for _, svc := range []string{LivenessService, ReadinessService, ExtProcService} {
		if got := check(svc); got != serving {
			t.Fatalf("%s when ready: %v", svc, got)
		}
	}
	if _, err := hc.Check(context.Background(), &healthpb.HealthCheckRequest{Service: "nope"}); status.Code(err) != codes.NotFound {
		t.Fatalf("unknown service: %v, want NotFound", err)
	}
	w, err := hc.Watch(context.Background(), &healthpb.HealthCheckRequest{Service: ReadinessService})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := w.Recv(); err != nil || r.GetStatus() != serving {
		t.Fatalf("watch: %v %v", r, err)
	}
}
