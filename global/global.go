package global

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc"

	"github.com/cellrouter/cellrouter/api"
	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/proxy"
	"github.com/cellrouter/cellrouter/cell/servers"
	"github.com/cellrouter/cellrouter/cell/telemetry"
)

// Global is a running global router's parts: New builds them and opens the
// listeners; Run serves until its context ends.
type Global struct {
	cfg    Config
	log    *slog.Logger
	rt     *Router
	proxy  *proxy.Proxy
	m      *metrics
	prober *grpcProber
	tr     *telemetry.Tracer

	grpcLis, httpLis net.Listener
	grpcSrv          *grpc.Server
	httpSrv          *http.Server
}

// New builds a global router over the cells of dir. A nil prober probes
// cells over gRPC.
func New(cfg Config, dir Directory, pr Prober, log *slog.Logger, opts ...Option) (*Global, error) {
	if log == nil {
		log = slog.Default()
	}
	o := buildOptions(opts)
	g := &Global{cfg: cfg, log: log, tr: telemetry.NewTracer(tracerName, o.tracerProvider)}
	if pr == nil {
		g.prober = newGRPCProber(o.tracerProvider)
		pr = g.prober
	}
	var err error
	if g.rt, err = NewRouter(cfg, dir, pr); err != nil {
		return nil, err
	}
	g.rt.tr = g.tr
	if g.proxy, err = proxy.New(cfg.proxyConfig()); err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	g.m = newMetrics(reg)
	registerCache(reg, g.rt.Tokenizer())
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	svc := &service{rt: g.rt, g: g}
	g.grpcSrv = servers.NewGRPC(o.tracerProvider)
	globalv1.RegisterGlobalServiceServer(g.grpcSrv, svc)
	gw := servers.NewGateway()
	if err := globalv1.RegisterGlobalServiceHandlerServer(context.Background(), gw, svc); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", g.metricsHandler(reg))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", g.serveReady)
	if err := servers.MountGateway(mux, gw, globalv1.File_api_global_v1_global_proto.Services().ByName("GlobalService")); err != nil {
		return nil, fmt.Errorf("global: gateway: %w", err)
	}
	mux.Handle("GET "+api.OpenAPIPath("global"), api.OpenAPIHandler("global"))
	mux.HandleFunc("POST /v1/completions", g.serveInference(openai.KindCompletion))
	mux.HandleFunc("POST /v1/chat/completions", g.serveInference(openai.KindChat))
	mux.HandleFunc("GET /v1/models", g.serveModels)
	mux.HandleFunc("GET /v1/models/{id...}", g.serveModel)
	g.httpSrv = &http.Server{Handler: servers.OpenAIErrors(mux), ReadHeaderTimeout: 10 * time.Second}

	if g.grpcLis, err = net.Listen("tcp", cfg.GRPCAddr); err != nil {
		return nil, fmt.Errorf("global: listen grpc_addr: %w", err)
	}
	if g.httpLis, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		g.grpcLis.Close()
		return nil, fmt.Errorf("global: listen http_addr: %w", err)
	}
	return g, nil
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
	errc := make(chan error, 2)
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
	g.log.Info("globald serving", "http", g.HTTPAddr(), "grpc", g.GRPCAddr())
	<-ctx.Done()
	servers.Stop(g.httpSrv, g.grpcSrv, g.cfg.ShutdownTimeout)
	wg.Wait()
	close(errc)
	return <-errc
}
