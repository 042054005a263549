package global

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/cellrouter/cellrouter/api"
	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/servers"
	"github.com/cellrouter/cellrouter/internal/statuspage"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// Global is a running global router's parts: New builds them and opens the
// listeners; Run serves until its context ends.
type Global struct {
	cfg    Config
	log    *slog.Logger
	access *logging.AccessLog // nil: no access log
	// decisions is the ring of recent decisions (nil: off).
	decisions *decisions.Ring
	rt        *Router
	proxy     *proxy.Proxy
	m         *metrics
	prober    *grpcProber
	stats     *cellStats // per cell: probes, round trips, hit rates (the status page)
	tr        *telemetry.Tracer
	turn      atomic.Uint64 // round robin over each cell's replicas
	// shareDrain sends a cell drain to the peer replicas (nil without a
	// pool).
	shareDrain func(cell string, cancel bool)
	// pool is the gossip node's standing in its pool, for /readyz (nil
	// without a pool); reg is the metrics registry, which the Daemon adds
	// the pool's gauges to.
	pool func() gossip.PoolStatus
	reg  *prometheus.Registry

	grpcLis, httpLis net.Listener
	grpcSrv          *grpc.Server
	httpSrv          *http.Server
	sec              *security
	// epp is the endpoint picker a global gateway calls (nil unless
	// Config.EPPAddr is set); eppm its metrics.
	epp  *eppServer
	eppm *eppMetrics
}

// New builds a global router over the cells of dir. A nil prober probes
// cells over gRPC.
func New(cfg Config, dir Directory, pr Prober, log *slog.Logger, opts ...Option) (*Global, error) {
	if log == nil {
		log = slog.Default()
	}
	o := buildOptions(opts)
	g := &Global{cfg: cfg, log: log, tr: telemetry.NewTracer(tracerName, o.tracerProvider),
		access: logging.NewAccessLog(log, "global", "", cfg.AccessLog), decisions: decisions.New(cfg.Decisions)}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	g.reg = reg
	var err error
	if g.sec, err = newSecurity(cfg, log, reg); err != nil {
		return nil, err
	}
	cellTLS := g.sec.cellTLS()
	if pr == nil {
		g.prober = newGRPCProber(o.tracerProvider, cellTLS)
		pr = g.prober
	}
	if g.rt, err = NewRouter(cfg, dir, pr); err != nil {
		return nil, err
	}
	g.rt.tr = g.tr
	g.rt.tok.useTLS(cellTLS)
	pc := cfg.proxyConfig()
	pc.TLS = cellTLS
	if g.proxy, err = proxy.New(pc); err != nil {
		return nil, err
	}
	if g.prober != nil {
		g.prober.ej = g.proxy
	}
	g.m = newMetrics(reg)
	g.stats = newCellStats()
	reg.MustRegister(g.proxy.Collector("cellrouter_global_handoff", "cell replica", nil))
	registerCache(reg, g.rt.Tokenizer())
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	svc := &service{rt: g.rt, g: g}
	g.grpcSrv = servers.NewGRPC(o.tracerProvider, g.sec.grpcOptions()...)
	globalv1.RegisterGlobalServiceServer(g.grpcSrv, svc)
	gw := servers.NewGateway()
	if err := globalv1.RegisterGlobalServiceHandlerServer(context.Background(), gw, svc); err != nil {
		return nil, err
	}
	// Health, readiness and the OpenAPI document are public; the control
	// plane and metrics need admin, the data plane inference.
	admin := func(h http.Handler) http.Handler { return g.sec.guard.Require(auth.ScopeAdmin, h) }
	infer := func(h http.HandlerFunc) http.Handler { return g.sec.guard.Require(auth.ScopeInference, h) }
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", admin(g.metricsHandler(reg)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", g.serveReady)
	if err := servers.MountGateway(mux, admin(gw), globalv1.File_api_global_v1_global_proto.Services().ByName("GlobalService")); err != nil {
		return nil, fmt.Errorf("global: gateway: %w", err)
	}
	// The recent decisions are control plane: admin, as the state APIs.
	mux.Handle("GET "+DecisionsPath, admin(http.HandlerFunc(g.decisions.ServeList)))
	mux.Handle("GET "+DecisionsPath+"/{id}", admin(http.HandlerFunc(g.decisions.ServeOne)))
	// The status page's last decisions are the decision ring's, each
	// linked to its explanation.
	mux.Handle("GET "+StatusPath, admin(g.statusHandler(statuspage.FromRing(g.decisions,
		func(r DecisionRecord) string { return r.Cell }))))
	mux.Handle("GET "+api.OpenAPIPath("global"), api.OpenAPIHandler("global", buildinfo.Read().Version))
	mux.Handle("POST /v1/completions", infer(g.serveInference(openai.KindCompletion)))
	mux.Handle("POST /v1/chat/completions", infer(g.serveInference(openai.KindChat)))
	mux.Handle("GET /v1/models", infer(g.serveModels))
	mux.Handle("GET /v1/models/{id...}", infer(g.serveModel))
	g.httpSrv = g.sec.httpServer(servers.OpenAIErrors(mux))

	if g.grpcLis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return nil, fmt.Errorf("global: listen grpc_addr: %w", err)
	}
	if g.httpLis, err = g.sec.listenHTTP(cfg.HTTPAddr); err != nil {
		g.grpcLis.Close()
		return nil, fmt.Errorf("global: listen http_addr: %w", err)
	}
	if cfg.EPPAddr != "" {
		g.eppm = newEPPMetrics(reg)
		if g.epp, err = g.newEPPServer(o.tracerProvider); err != nil {
			g.grpcLis.Close()
			g.httpLis.Close()
			return nil, fmt.Errorf("global: listen epp_addr: %w", err)
		}
	}
	return g, nil
}

// closeListeners closes the listeners of a Global that will not Run.
func (g *Global) closeListeners() {
	g.grpcLis.Close()
	g.httpLis.Close()
	if g.epp != nil {
		g.epp.lis.Close()
	}
}

// metricsHandler refreshes the per-cell gauges at scrape time.
func (g *Global) metricsHandler(reg *prometheus.Registry) http.Handler {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.m.observeCells(g.rt.views())
		h.ServeHTTP(w, r)
	})
}

// HTTPAddr and GRPCAddr return the bound addresses.
func (g *Global) HTTPAddr() string { return g.httpLis.Addr().String() }

// GRPCAddr returns the gRPC address.
func (g *Global) GRPCAddr() string { return g.grpcLis.Addr().String() }

// Router returns the decision layer (for tests and tools).
func (g *Global) Router() *Router { return g.rt }

func (g *Global) serveReady(w http.ResponseWriter, _ *http.Request) {
	if why := g.poolNotReady(); why != "" {
		http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
		return
	}
	for _, v := range g.rt.views() {
		if v.usable() {
			fmt.Fprintln(w, "ready")
			return
		}
	}
	http.Error(w, "not ready: no usable cell", http.StatusServiceUnavailable)
}

// Run serves until ctx ends, then stops the servers within
// ShutdownTimeout and returns.
func (g *Global) Run(ctx context.Context) error {
	defer g.proxy.Close()
	if g.prober != nil {
		defer g.prober.close()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	fail := func(err error) {
		if err != nil {
			errc <- err
			cancel()
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); fail(servers.ServeGRPC("global", g.grpcSrv, g.grpcLis)) }()
	go func() { defer wg.Done(); fail(servers.ServeHTTP("global", g.httpSrv, g.httpLis)) }()
	if g.epp != nil {
		wg.Add(1)
		go func() { defer wg.Done(); fail(servers.ServeGRPC("global epp", g.epp.srv, g.epp.lis)) }()
	}
	g.sec.run(ctx, &wg)
	g.log.Info("globald serving", "http", g.HTTPAddr(), "grpc", g.GRPCAddr(), "epp", g.EPPAddr(), "api_keys", g.sec.guard.Enabled(),
		"tls_to_cells", g.sec.tls != nil, "tls_served", g.cfg.Security.ServeTLS)
	edge.WarnIfExposed(g.log, g.sec.guard.Enabled(), edge.Listener{Name: "http", Addr: g.HTTPAddr()},
		edge.Listener{Name: "grpc", Addr: g.GRPCAddr()})
	<-ctx.Done()
	if g.epp != nil {
		g.epp.stop(g.cfg.ShutdownTimeout)
	}
	servers.Stop(g.httpSrv, g.grpcSrv, g.cfg.ShutdownTimeout)
	wg.Wait()
	close(errc)
	return <-errc
}
