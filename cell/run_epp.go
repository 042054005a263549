package cell

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/epp"
	"github.com/cellrouter/cellrouter/internal/servers"
)

// The cell as an Endpoint Picker: with epp_addr set, a gateway (Envoy's
// ext_proc filter, a Gateway API implementation's InferencePool) asks the
// cell which pod takes each request (api_epp.go) and carries the request
// itself. The server is a gRPC server of its own, on its own listener, with
// the TLS of grpc_addr and the same limits, but not its guard: the
// gateway's connection vouches for no client, so each request is admitted
// by the API key in its own headers, as proxy mode admits it
// (edge.Guard.AdmitHeader).

// eppServer is the running picker; nil without epp_addr.
type eppServer struct {
	grpc *grpc.Server
	lis  net.Listener
}

// buildEPP builds the picker's server and opens its listener.
func (c *Cell) buildEPP() error {
	if c.cfg.EPPAddr == "" {
		return nil
	}
	cfg := epp.DefaultConfig()
	cfg.MaxBodyBytes = c.cfg.Routing.MaxBodyBytes
	m := newEPPMetrics(c.cfg.CellID, c.promReg)
	srv, err := epp.NewServer(cfg, eppPicker{c}, epp.WithAdmitter(c.sec.guard), epp.WithLogger(c.log), epp.WithObserver(m))
	if err != nil {
		return fmt.Errorf("cell: epp: %w", err)
	}
	g := servers.NewGRPC(c.tp, c.sec.eppOptions()...)
	epp.Register(g, srv, epp.NewHealth(func() bool { return len(c.pendingTransports()) == 0 }))
	lis, err := net.Listen("tcp", c.cfg.EPPAddr)
	if err != nil {
		return fmt.Errorf("cell: listen epp_addr: %w", err)
	}
	c.epp = &eppServer{grpc: g, lis: lis}
	return nil
}

// EPPAddr returns the address the picker listens on, "" without one.
func (c *Cell) EPPAddr() string {
	if c.epp == nil {
		return ""
	}
	return c.epp.lis.Addr().String()
}

// eppOptions are the picker server's credentials and limits: those of the
// gRPC server without its guard.
func (s *security) eppOptions() []grpc.ServerOption {
	opts := edge.GRPCServerOptions(s.limits, s.m)
	if s.server != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.server.ServerConfig("h2"))))
	}
	return opts
}

// runEPP serves the picker until ctx ends, then stops it gracefully
// within timeout (streams in flight are the gateway's requests).
func (e *eppServer) run(ctx context.Context, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- servers.ServeGRPC("cell: epp", e.grpc, e.lis) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	stopped := make(chan struct{})
	go func() { e.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(timeout):
		e.grpc.Stop()
		<-stopped
	}
	return <-errc
}

// eppMetrics count the picker's answers.
type eppMetrics struct {
	picks    prometheus.Counter
	refusals *prometheus.CounterVec
	pickTime prometheus.Histogram
}

func newEPPMetrics(cellID string, reg prometheus.Registerer) *eppMetrics {
	l := prometheus.Labels{"cell": cellID}
	m := &eppMetrics{
		picks: prometheus.NewCounter(prometheus.CounterOpts{Name: "cellrouter_epp_picks_total", ConstLabels: l,
			Help: "Requests a gateway asked the cell's Endpoint Picker about that it answered with endpoints."}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_epp_refusals_total", ConstLabels: l,
			Help: "Requests the Endpoint Picker answered with an immediate response, by HTTP status."}, []string{"status"}),
		pickTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_epp_pick_seconds", ConstLabels: l,
			Help: "Time from a request's last body byte to the picker's answer, the holds of flow control's queue and of the prefix wait included.",
			// 50 us to 26 s: a decision, and the holds up to their bounds.
			Buckets: prometheus.ExponentialBuckets(50e-6, 2, 20)}),
	}
	reg.MustRegister(m.picks, m.refusals, m.pickTime)
	return m
}

// Picked implements epp.Observer.
func (m *eppMetrics) Picked(took time.Duration) {
	m.picks.Inc()
	m.pickTime.Observe(took.Seconds())
}

// Refused implements epp.Observer.
func (m *eppMetrics) Refused(status int) {
	m.refusals.WithLabelValues(strconv.Itoa(status)).Inc()
}
