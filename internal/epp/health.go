package epp

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Health answers the gRPC health services the protocol requires:
// LivenessService (SERVING while the process serves), ReadinessService and
// ExtProcService (SERVING while ready reports true; the cell: its
// transports caught up). Watch streams re-read ready every WatchInterval.
type Health struct {
	healthpb.UnimplementedHealthServer
	ready func() bool
	// WatchInterval is how often a Watch re-reads readiness.
	WatchInterval time.Duration
}

// NewHealth returns the health services for ready (nil: always ready).
func NewHealth(ready func() bool) *Health {
	if ready == nil {
		ready = func() bool { return true }
	}
	return &Health{ready: ready, WatchInterval: time.Second}
}

// Register registers the external processor s and its health services on g.
func Register(g *grpc.Server, s *Server, h *Health) {
	extprocv3Register(g, s)
	healthpb.RegisterHealthServer(g, h)
}

func (h *Health) status(service string) (healthpb.HealthCheckResponse_ServingStatus, bool) {
	switch service {
	case LivenessService:
		return healthpb.HealthCheckResponse_SERVING, true
	case ReadinessService, ExtProcService, "":
		if h.ready() {
			return healthpb.HealthCheckResponse_SERVING, true
		}
		return healthpb.HealthCheckResponse_NOT_SERVING, true
	}
	return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, false
}

// Check answers one health check; an unknown service is NotFound.
func (h *Health) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, ok := h.status(req.GetService())
	if !ok {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

// List answers the status of every service.
func (h *Health) List(_ context.Context, _ *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, s := range []string{LivenessService, ReadinessService, ExtProcService} {
		st, _ := h.status(s)
		out.Statuses[s] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

// Watch sends the service's status now and on every change until the
// caller goes away; the call's goroutine is the only one it uses.
func (h *Health) Watch(req *healthpb.HealthCheckRequest, srv healthpb.Health_WatchServer) error {
	t := time.NewTicker(h.WatchInterval)
	defer t.Stop()
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	for {
		st, _ := h.status(req.GetService())
		if st != last {
			if err := srv.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-srv.Context().Done():
			return nil
		case <-t.C:
		}
	}
}
