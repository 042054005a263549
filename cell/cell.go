package cell

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"

	"github.com/cellrouter/cellrouter/api"
	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/grpcpub"
	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/podset"
	"github.com/cellrouter/cellrouter/cell/replica"
	"github.com/cellrouter/cellrouter/cell/snapshot"
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

// transport is an event source the cell runs: one of the plug-ins behind
// events.Sink. Run blocks until ctx ends and the transport's goroutines
// stopped; Ready is closed once the transport is connected and caught up.
type transport interface {
	Name() string
	Run(ctx context.Context) error
	Ready() <-chan struct{}
}

// Cell is a running cell daemon's parts. New builds them and opens the
// listeners; Run serves until its context ends.
type Cell struct {
	cfg    Config
	log    *slog.Logger
	access *logging.AccessLog // nil: no access log
	// decisions is the ring of recent decisions (nil: off).
	decisions *decisions.Ring
	ix        *index.Index
	learner   *index.Learner
	learned   *learnedPods
	pods      *podset.Set // the live pod set: static pods and discovered ones
	disc      *discoverySync
	reg       *events.Registry
	applier   *events.Applier
	state     *stateServer
	warn      *unindexedWarner

	grpcLis, httpLis net.Listener
	grpcSrv          *grpc.Server
	epp              *eppServer // the Endpoint Picker, nil without epp_addr (run_epp.go)
	httpSrv          *http.Server
	transports       []transport
	metrics          []func(chan<- prometheus.Metric) // transports' exporters

	gossipAddr atomic.Value    // string
	sharer     *replica.Sharer // shares load and drains with peer replicas
	node       atomic.Pointer[gossip.Node]
	bandWaits  atomic.Pointer[BandWaitFunc] // nil: zero waits (SetBandWaits)

	router  *router
	engines *engineScraper // nil when engine_metrics is disabled
	// flow is the flow controller between Pick and Execute; it passes
	// every request at once when flow_control is disabled.
	flow    *flowcontrol.Controller
	follow  *followIndex // the prompts of requests passing flow control
	tok     *cellTokenizer
	proxy   *proxy.Proxy
	rm      *routeMetrics
	promReg *prometheus.Registry

	tp trace.TracerProvider // nil: the global provider
	tr *telemetry.Tracer
	// requestSpan are the cell.request span's options, built once.
	requestSpan []trace.SpanStartOption

	sec     *security      // keys, TLS, limits
	models  *podModels     // what the pods serve
	keyring *gossipKeyring // nil without gossip.keyring_file

	snapm        *snapMetrics
	resumeStream uint64            // JetStream position of the snapshot loaded (0: none)
	snapLock     *snapshot.DirLock // the snapshot folder, held from New to the end of Run
	streamPos    func() uint64     // the NATS consumer's position; nil without NATS
}

// New builds a cell from a validated configuration and opens its
// listeners, so the addresses are known before Run (useful with port 0).
func New(cfg Config, log *slog.Logger, opts ...Option) (_ *Cell, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	access := logging.NewAccessLog(log, "cell", cfg.CellID, cfg.AccessLog)
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	c := &Cell{cfg: cfg, log: log.With("cell", cfg.CellID), access: access, decisions: decisions.New(cfg.Decisions), tp: o.tracerProvider}
	defer func() {
		if err != nil {
			c.unlockSnapshots() // a cell that is not built holds no folder
		}
	}()
	c.tr = telemetry.NewTracer(tracerName, c.tp)
	c.requestSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(telemetry.CellKey.String(cfg.CellID))}
	c.promReg = prometheus.NewRegistry()
	c.rm = newRouteMetrics(cfg.CellID, c.promReg)
	if c.sec, err = newSecurity(cfg, c.log, c.promReg); err != nil {
		return nil, err
	}
	c.warn = newUnindexedWarner(c.log)
	c.snapm = newSnapMetrics()
	c.metrics = append(c.metrics, c.snapm.collect(cfg.CellID))
	// The index state comes from a snapshot when there is a valid one
	// (run_snapshots.go); the security is built first for a bootstrap's TLS.
	if err := c.buildIndexState(); err != nil {
		return nil, err
	}
	c.pods = podset.New(cfg.staticPods())
	c.learned = newLearnedPods(cfg, c.ix, c.learner, c.pods)
	c.state = newStateServer(cfg.CellID, c.ix, c.reg, c.applier)
	c.state.snapshot = c.streamSnapshot
	if c.keyring, err = newGossipKeyring(cfg, c.sec); err != nil {
		c.ix.Close()
		return nil, err
	}
	c.models = newPodModels()
	tok, err := newTokenizer(cfg, func() []pipeline.Candidate { return c.router.candidates(nil) }, c.sec.podTLS())
	if err != nil {
		c.ix.Close()
		return nil, fmt.Errorf("%w: routing.tokenizer_json: %v", ErrConfig, err)
	}
	c.tok = tok
	obs := observer{m: c.rm, tr: c.tr, cell: cfg.CellID}
	// The scrapes run in Run, after the router is built: each takes the
	// router's count for its pod when answered.
	routerLoad := func(pod string) (int, int) {
		u := c.router.tracker.Usage(pod)
		return u.Requests, u.Blocks
	}
	if c.engines, err = newEngineScraper(cfg, c.reg, c.sec.podTLS(), c.promReg, c.log, routerLoad); err != nil {
		c.ix.Close()
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c.state.engines = c.engines
	if c.router, err = newRouter(cfg, c.ix, c.reg, c.learned, c.state, tracedTokenizer{tok, obs}, obs, c.engines); err != nil {
		c.ix.Close()
		return nil, err
	}
	c.router.view = c.pods
	c.promReg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_prefix_waiting",
		Help:        "Requests waiting now for a prefill of their prefix in progress on their pod (routing.prefix_wait).",
		ConstLabels: prometheus.Labels{"cell": cfg.CellID}}, func() float64 { return float64(c.router.prefixWaiting.Load()) }))
	fc := flowConfig(cfg)
	sat := &podSaturation{cfg: fc, tracker: c.router.tracker, pods: c.pods, engines: c.engines, blockSize: cfg.Events.BlockSize}
	c.flow = flowcontrol.New(fc, sat, newFlowMetrics(cfg.CellID, c.promReg))
	c.follow = newFollowIndex()
	registerFlowController(cfg.CellID, c.promReg, c.flow)
	// The cell gossips, per band, how long a new request would wait.
	c.SetBandWaits(c.flow.WaitEstimate)
	c.state.router = c.router
	c.state.pods = c.pods
	if c.sharer, err = replica.New(cfg.sharerConfig(), c.router.tracker, c.onPeerDrain); err != nil {
		c.ix.Close()
		return nil, fmt.Errorf("%w: replica: %v", ErrConfig, err)
	}
	c.state.share = c.shareDrain
	pc := cfg.Routing.proxyConfig()
	pc.TLS = c.sec.podTLS()
	if c.proxy, err = proxy.New(pc); err != nil {
		c.ix.Close()
		return nil, err
	}
	c.promReg.MustRegister(c.proxy.Collector("cellrouter_upstream", "pod", prometheus.Labels{"cell": cfg.CellID}))
	if err := c.buildTransports(); err != nil {
		c.ix.Close()
		return nil, err
	}
	if err := c.buildDiscovery(); err != nil {
		c.ix.Close()
		return nil, err
	}
	if err := c.buildServers(); err != nil {
		c.ix.Close()
		return nil, err
	}
	return c, nil
}

func (c *Cell) buildServers() error {
	pub, err := grpcpub.NewServer(c.applier, c.publisherConfig())
	if err != nil {
		return err
	}
	c.state.transportDrops = c.transportDrops(pub)
	c.grpcSrv = servers.NewGRPC(c.tp, c.sec.grpcOptions()...)
	eventsv1.RegisterEventPublisherServer(c.grpcSrv, pub)
	cellv1.RegisterCellServiceServer(c.grpcSrv, c.state)

	gw := servers.NewGateway()
	if err := cellv1.RegisterCellServiceHandlerServer(context.Background(), gw, c.state); err != nil {
		return fmt.Errorf("cell: gateway: %w", err)
	}
	promReg := c.promReg
	coll := newCollector(c.cfg.CellID, c.ix, c.reg, c.applier)
	coll.learner = c.learner
	coll.extra = append(append(coll.extra, grpcpubMetrics(c.cfg.CellID, pub)), c.metrics...)
	promReg.MustRegister(coll, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	promReg.MustRegister(newSaturationCollector(c.cfg.CellID, c.saturationPods))
	c.registerReplicaMetrics(promReg)
	c.registerPoolMetrics(promReg)

	// Health, readiness and the OpenAPI document are public; the control
	// plane and metrics need admin, the data plane inference.
	g := c.sec.guard
	admin := func(h http.Handler) http.Handler { return g.Require(auth.ScopeAdmin, h) }
	infer := func(h http.HandlerFunc) http.Handler { return g.Require(auth.ScopeInference, h) }
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", admin(promhttp.HandlerFor(promReg, promhttp.HandlerOpts{})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("GET /readyz", c.serveReady)
	if err := servers.MountGateway(mux, admin(gw), cellv1.File_api_cell_v1_cell_proto.Services().ByName("CellService")); err != nil {
		return fmt.Errorf("cell: gateway: %w", err)
	}
	// The recent decisions are control plane: admin, as the state APIs.
	mux.Handle("GET "+DecisionsPath, admin(http.HandlerFunc(c.decisions.ServeList)))
	mux.Handle("GET "+DecisionsPath+"/{id}", admin(http.HandlerFunc(c.decisions.ServeOne)))
	// The status page's last decisions are the decision ring's, each
	// linked to its explanation.
	mux.Handle("GET "+StatusPath, admin(c.statusHandler(statuspage.FromRing(c.decisions,
		func(r DecisionRecord) string { return r.Pod }))))
	mux.Handle("GET "+api.OpenAPIPath("cell"), api.OpenAPIHandler("cell", buildinfo.Read().Version))
	mux.Handle("POST /v1/completions", infer(c.serveInference(openai.KindCompletion)))
	mux.Handle("POST /v1/chat/completions", infer(c.serveInference(openai.KindChat)))
	mux.Handle("GET /v1/models", infer(c.serveModels))
	mux.Handle("GET /v1/models/{id...}", infer(c.serveModel))
	mux.Handle("POST "+TokenizePath, infer(c.serveTokenize))
	c.httpSrv = c.sec.httpServer(servers.OpenAIErrors(mux))

	if c.grpcLis, err = net.Listen("tcp", c.cfg.GRPCAddr); err != nil {
		return fmt.Errorf("cell: listen grpc_addr: %w", err)
	}
	if c.httpLis, err = c.sec.listenHTTP(c.cfg.HTTPAddr); err != nil {
		c.grpcLis.Close()
		return fmt.Errorf("cell: listen http_addr: %w", err)
	}
	if err := c.buildEPP(); err != nil {
		c.grpcLis.Close()
		c.httpLis.Close()
		return err
	}
	return nil
}

// HTTPAddr returns the address the HTTP server listens on.
func (c *Cell) HTTPAddr() string { return c.httpLis.Addr().String() }

// GRPCAddr returns the address the gRPC server listens on.
func (c *Cell) GRPCAddr() string { return c.grpcLis.Addr().String() }

// Index returns the cell's block index (for tests and tools).
func (c *Cell) Index() *index.Index { return c.ix }

// Applier returns the cell's event applier, the Sink every transport feeds.
func (c *Cell) Applier() *events.Applier { return c.applier }

// Learner returns the cell's learner: the speculative and approximate
// blocks it learns from its own routing (for tests and tools).
func (c *Cell) Learner() *index.Learner { return c.learner }

// pendingTransports lists the transports that are not ready yet.
func (c *Cell) pendingTransports() []string {
	var out []string
	for _, t := range c.transports {
		select {
		case <-t.Ready():
		default:
			out = append(out, t.Name())
		}
	}
	sort.Strings(out)
	return out
}

func (c *Cell) serveReady(w http.ResponseWriter, _ *http.Request) {
	if p := c.pendingTransports(); len(p) > 0 {
		http.Error(w, "not ready: waiting for "+strings.Join(p, ", "), http.StatusServiceUnavailable)
		return
	}
	if why := c.poolDegraded(); why != "" {
		// Still ready: the cell serves without its pool (see run_gossip_pool.go).
		fmt.Fprintln(w, "ready (degraded: "+why+")")
		return
	}
	fmt.Fprintln(w, "ready")
}

// Run serves until ctx ends, then stops the servers (gracefully, within
// ShutdownTimeout), the transports and the loops, closes the index and
// returns. It returns the first error that stopped a part early.
func (c *Cell) Run(ctx context.Context) error {
	defer c.ix.Close()
	defer c.proxy.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var wg sync.WaitGroup
	errc := make(chan error, 3+len(c.transports))
	fail := func(err error) {
		if err != nil && ctx.Err() == nil {
			errc <- err
			cancel()
		}
	}
	wg.Add(2)
	go func() { defer wg.Done(); fail(servers.ServeGRPC("cell", c.grpcSrv, c.grpcLis)) }()
	go func() { defer wg.Done(); fail(servers.ServeHTTP("cell", c.httpSrv, c.httpLis)) }()
	if c.epp != nil {
		wg.Add(1)
		go func() { defer wg.Done(); fail(c.epp.run(ctx, c.cfg.ShutdownTimeout)) }()
	}
	for _, t := range c.transports {
		wg.Add(1)
		go func(t transport) {
			defer wg.Done()
			if err := t.Run(ctx); err != nil {
				fail(fmt.Errorf("cell: transport %s: %w", t.Name(), err))
			}
		}(t)
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tickLoop(ctx, c.cfg.TickInterval, c.applier, func(msg string, args ...any) { c.log.Warn(msg, args...) },
			func() {
				c.warn.checkUnroutable(c.reg)
				c.learned.sync(c.reg.Snapshot())
			})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		expireLoop(ctx.Done(), c.cfg.learnInterval(), c.learner)
	}()
	if c.cfg.Gossip.Bind != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fail(c.runGossip(ctx))
		}()
	}
	if c.cfg.Snapshot.Dir != "" {
		wg.Add(1)
		go func() { defer wg.Done(); c.snapshotLoop(ctx) }()
	}
	if c.cfg.HealthInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			healthLoop(ctx, c.cfg.HealthInterval, c.cfg.HealthTimeout, c.heldPods, c.reg, c.sec.podTLS())
		}()
	}
	wg.Add(1)
	go func() { defer wg.Done(); c.modelsLoop(ctx) }()
	wg.Add(1)
	go func() { defer wg.Done(); c.engines.run(ctx) }()
	wg.Add(1)
	go func() { defer wg.Done(); c.flow.Run(ctx) }()
	c.sec.run(ctx, &wg)
	edge.WarnIfExposed(c.log, c.sec.authenticated(), edge.Listener{Name: "http", Addr: c.HTTPAddr()},
		edge.Listener{Name: "grpc", Addr: c.GRPCAddr()})
	c.log.Info("celld serving", "http", c.HTTPAddr(), "grpc", c.GRPCAddr(), "epp", c.EPPAddr(), "transports", len(c.transports))

	<-ctx.Done()
	servers.Stop(c.httpSrv, c.grpcSrv, c.cfg.ShutdownTimeout)
	wg.Wait()
	if c.cfg.Snapshot.Dir != "" {
		// Every writer stopped: the last snapshot is exact.
		c.writeSnapshot("shutdown")
	}
	c.unlockSnapshots()
	close(errc)
	return <-errc // nil when nothing failed
}

// Run builds a cell from cfg and serves until ctx ends.
func Run(ctx context.Context, cfg Config, log *slog.Logger, opts ...Option) error {
	c, err := New(cfg, log, opts...)
	if err != nil {
		return err
	}
	return c.Run(ctx)
}
