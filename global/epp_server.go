package global

import (
	"net"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/cellrouter/cellrouter/internal/epp"
	"github.com/cellrouter/cellrouter/internal/servers"
)

// eppServer is globald's endpoint picker (Config.EPPAddr): the ext_proc
// gRPC server a global gateway calls, its health services and listener.
type eppServer struct {
	srv *grpc.Server
	lis net.Listener
}

// eppMetrics count the global picker's answers.
type eppMetrics struct {
	answers   *prometheus.CounterVec
	pickTime  prometheus.Histogram
	exchanges *prometheus.CounterVec
}

func newEPPMetrics(reg prometheus.Registerer) *eppMetrics {
	m := &eppMetrics{
		answers: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_global_epp_answers_total",
			Help: "Requests globald's endpoint picker answered: picked (with cell gateways), or the status of its " +
				"immediate response (503: no cell with a gateway; 4xx: refused)."}, []string{"answer"}),
		pickTime: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "cellrouter_global_epp_pick_seconds",
			Help:    "Time from a request's last body byte to the picker's answer, the decision and its probes included.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 2, 16)}),
		exchanges: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cellrouter_global_epp_exchanges_total",
			Help: "Picked requests by the status class of the cell gateway's response (cancelled: the stream ended first)."},
			[]string{"status"}),
	}
	reg.MustRegister(m.answers, m.pickTime, m.exchanges)
	return m
}

// Picked implements epp.Observer.
func (m *eppMetrics) Picked(took time.Duration) {
	m.answers.WithLabelValues("picked").Inc()
	m.pickTime.Observe(took.Seconds())
}

// Refused implements epp.Observer.
func (m *eppMetrics) Refused(status int) { m.answers.WithLabelValues(strconv.Itoa(status)).Inc() }

// newEPPServer builds the picker's server and opens its listener: TLS as
// the data plane's with ServeTLS, the data plane's limits on a body
// (Limits.MaxBodyBytes) and its admission
// (API keys and tenant limits from the request's Authorization header,
// edge.Guard.AdmitHeader). Readiness is /readyz's: a usable cell.
func (g *Global) newEPPServer(tp trace.TracerProvider) (*eppServer, error) {
	cfg := epp.DefaultConfig()
	cfg.MaxBodyBytes = g.cfg.Limits.MaxBodyBytes
	opts := []epp.Option{epp.WithLogger(g.log), epp.WithObserver(g.eppm)}
	if g.sec.guard.Enabled() {
		opts = append(opts, epp.WithAdmitter(g.sec.guard))
	}
	s, err := epp.NewServer(cfg, gatewayPicker{g: g}, opts...)
	if err != nil {
		return nil, err
	}
	srv := servers.NewGRPC(tp, g.sec.eppOptions()...)
	epp.Register(srv, s, epp.NewHealth(func() bool { return g.poolNotReady() == "" && g.hasUsableCell() }))
	lis, err := net.Listen("tcp", g.cfg.EPPAddr)
	if err != nil {
		return nil, err
	}
	return &eppServer{srv: srv, lis: lis}, nil
}

// hasUsableCell reports whether some cell may take new requests.
func (g *Global) hasUsableCell() bool {
	for _, v := range g.rt.views() {
		if v.usable() {
			return true
		}
	}
	return false
}

// EPPAddr returns the address the endpoint picker listens on ("" when
// Config.EPPAddr is empty).
func (g *Global) EPPAddr() string {
	if g.epp == nil {
		return ""
	}
	return g.epp.lis.Addr().String()
}

// stop stops the server within timeout: in-flight streams (requests whose
// responses the picker follows) may end first, then the rest are cut.
func (e *eppServer) stop(timeout time.Duration) {
	done := make(chan struct{})
	go func() { e.srv.GracefulStop(); close(done) }()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		e.srv.Stop()
		<-done
	}
}
