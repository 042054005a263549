package global

import (
	"context"
	"crypto/tls"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// Prober asks one cell for its exact answer (CellService.Route, which
// changes nothing in the cell). It may be called concurrently.
type Prober interface {
	Probe(ctx context.Context, cell *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error)
}

// grpcProber keeps one client connection per cell replica. Each call is
// traced (a client span passing the W3C trace context to the cell) while a
// tracer provider is installed; without one only the caller's trace context
// goes along (telemetry.GatedStats).
type grpcProber struct {
	turn atomic.Uint64 // round robin over each cell's replicas

	trace []otelgrpc.Option
	tp    trace.TracerProvider             // nil: the global one
	creds credentials.TransportCredentials // mutual TLS to the cells, or plaintext

	// ej, when set, is the hand-off proxy's outlier ejection, keyed by a
	// replica's HTTP address: an ejected replica is not probed, and probes
	// that time out or find the replica unavailable count against it.
	ej probeEjector

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn
}

// errAllEjected is a probe's error when every replica of the cell is
// ejected: it was not sent.
var errAllEjected = errors.New("global: every replica of the cell is ejected")

// probeEjector is the part of the proxy's ejection the prober uses.
type probeEjector interface {
	Ejected(addr string) bool
	ReportFailure(addr string, timeout bool)
	ReportSuccess(addr string)
}

// newGRPCProber traces calls on tp, or on the global provider when tp is
// nil, and dials the cells with tlsCfg (nil: plaintext).
func newGRPCProber(tp trace.TracerProvider, tlsCfg *tls.Config) *grpcProber {
	p := &grpcProber{conns: map[string]*grpc.ClientConn{}, trace: []otelgrpc.Option{otelgrpc.WithPropagators(telemetry.Propagator)},
		creds: insecure.NewCredentials()}
	if tlsCfg != nil {
		p.creds = credentials.NewTLS(tlsCfg)
	}
	if tp != nil {
		p.trace = append(p.trace, otelgrpc.WithTracerProvider(tp))
		p.tp = tp
	}
	return p
}

func (p *grpcProber) conn(addr string) (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if c, ok := p.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(p.creds),
		grpc.WithStatsHandler(telemetry.GatedStats(otelgrpc.NewClientHandler(p.trace...), p.tp, true)))
	if err != nil {
		return nil, err
	}
	c.Connect() // start the handshake now; the first call waits for less of it
	p.conns[addr] = c
	return c, nil
}

// Probe implements Prober: it asks one live replica of the cell, taking
// them in turn, and the next replica when one cannot be reached (a replica
// that died before gossip said so), within ctx's deadline. Replicas hold
// the same index, so any one's answer is the cell's.
func (p *grpcProber) Probe(ctx context.Context, cell *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	resp, _, err := p.ProbeOpening(ctx, cell, req)
	return resp, err
}

// ProbeOpening implements openingProber: Probe, also saying whether the
// answer had to wait for a connection to open (its round trip then
// measures the handshake too, not only the distance).
func (p *grpcProber) ProbeOpening(ctx context.Context, cell *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, bool, error) {
	lastErr := errAllEjected
	opened := false
	for _, ep := range cell.rotated(p.turn.Add(1)) {
		if p.ej != nil && p.ej.Ejected(ep.HTTPAddr) {
			continue // a frozen replica would cost every request the probe deadline
		}
		c, err := p.conn(ep.GRPCAddr)
		if err != nil {
			return nil, opened, err
		}
		opened = opened || c.GetState() != connectivity.Ready
		resp, err := cellv1.NewCellServiceClient(c).Route(ctx, req)
		p.report(ctx, ep, err)
		if err == nil || status.Code(err) != grpccodes.Unavailable || ctx.Err() != nil {
			return resp, opened, err
		}
		lastErr = err
	}
	return nil, opened, lastErr
}

// report feeds the ejection with a probe's outcome: an answer, or a
// replica that was unavailable or missed the probe deadline (not a probe
// its caller abandoned).
func (p *grpcProber) report(ctx context.Context, ep Endpoint, err error) {
	switch {
	case p.ej == nil:
	case err == nil:
		p.ej.ReportSuccess(ep.HTTPAddr)
	case status.Code(err) == grpccodes.Unavailable, errors.Is(ctx.Err(), context.DeadlineExceeded):
		p.ej.ReportFailure(ep.HTTPAddr, false)
	}
}

// openingProber is a Prober that says whether a probe opened its
// connection; probeAll marks such answers so they are not taken for the
// cell's distance.
type openingProber interface {
	ProbeOpening(ctx context.Context, cell *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, bool, error)
}

// forget closes connections to cells that are gone.
func (p *grpcProber) forget(keep map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for addr, c := range p.conns {
		if !keep[addr] {
			c.Close()
			delete(p.conns, addr)
		}
	}
}

func (p *grpcProber) close() {
	p.forget(nil)
}

// probeAll probes the candidates in parallel, all bounded by timeout, with
// a span per probe, and returns the answers in candidate order.
func probeAll(ctx context.Context, tr *telemetry.Tracer, pr Prober, timeout time.Duration, views []CellView, cands []Candidate, req *cellv1.RouteRequest) []ProbeAnswer {
	answers := make([]ProbeAnswer, len(cands))
	// One deadline for the whole fan-out (one timer, not one per probe).
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	probe := func(i int, c Candidate) {
		v := &views[c.Cell]
		pctx, span := tr.Start(ctx, "global.probe")
		defer span.End()
		start := time.Now()
		var resp *cellv1.RouteResponse
		var err error
		opened := false
		if op, ok := pr.(openingProber); ok {
			resp, opened, err = op.ProbeOpening(pctx, v, req)
		} else {
			resp, err = pr.Probe(pctx, v, req)
		}
		a := ProbeAnswer{Cell: c.Cell, Err: err, RTT: time.Since(start), Opened: opened, CellBlocks: v.Load.ActiveBlocks}
		if err == nil && resp.GetPick() != nil {
			a.Pod, a.Matched, a.Load, a.Cost = resp.GetPick().GetPod(), int(resp.GetPick().GetMatchedBlocks()), resp.GetPick().GetLoad(), resp.GetPick().GetCost()
			a.Busy = resp.GetFailedOpen()
			a.Evicts = resp.GetPick().GetEvictBlocks()
		} else if err == nil {
			a.Err = errNoPick
		}
		if span.IsRecording() { // attributes cost allocations; only for a real trace
			span.SetAttributes(attribute.String("cellrouter.cell", v.ID), attribute.Int("cellrouter.estimated_blocks", c.Estimated),
				attribute.Float64("cellrouter.rtt_ms", float64(a.RTT)/1e6), attribute.Int("cellrouter.matched_blocks", a.Matched),
				attribute.String("cellrouter.pod", a.Pod))
		}
		if a.Err != nil {
			span.RecordError(a.Err)
			span.SetStatus(codes.Error, a.Err.Error())
		}
		answers[i] = a
	}
	// The other probes run on their own goroutines; the first on this one,
	// which would otherwise only wait.
	for i := 1; i < len(cands); i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			probe(i, cands[i])
		}(i)
	}
	if len(cands) > 0 {
		probe(0, cands[0])
	}
	wg.Wait()
	return answers
}
