package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/memlimit"
	"github.com/cellrouter/cellrouter/internal/statuspage"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "celld:", err)
		os.Exit(1)
	}
}

// run starts the daemon as args say, logging to logw, and serves until ctx
// ends. --version and --check-config print their answer to out and return.
func run(ctx context.Context, args []string, out, logw io.Writer) error {
	fs := flag.NewFlagSet("celld", flag.ContinueOnError)
	fs.SetOutput(logw)
	configPath := fs.String("config", "", "path to the YAML configuration (empty: all defaults)")
	checkPath := fs.String("check-config", "", "check the YAML configuration at this path as celld would start it (with the other flags applied), print a summary and exit")
	version := fs.Bool("version", false, "print the version and exit")
	httpAddr := fs.String("http-addr", "", "override http_addr")
	grpcAddr := fs.String("grpc-addr", "", "override grpc_addr")
	eppAddr := fs.String("epp-addr", "", "override epp_addr: serve the Endpoint Picker (gRPC ext_proc for a gateway) on HOST:PORT")
	cellID := fs.String("cell-id", "", "override cell_id")
	replicaID := fs.String("replica-id", "", "override replica.id: this replica's name within its cell (default $NODE_NAME, $POD_NAME or the host name)")
	gossipAdv := fs.String("gossip-advertise", "", "override gossip.advertise: the IP:port other members reach this cell at (its API addresses take the same host)")
	gatewayAddr := fs.String("gateway-address", "", "override gossip.gateway_address: host:port of the gateway that runs this cell as its endpoint picker, advertised to globald's picker")
	secret := fs.String("gossip-secret-key", "", "override gossip.secret_key: the pool's base64 encryption key")
	logOpts := logging.BindFlags(fs, logging.DefaultOptions())
	applyAccess := logging.BindAccessFlags(fs, logging.DefaultAccessConfig())
	applyDecisions := decisions.BindFlags(fs, decisions.DefaultConfig())
	applyStatus := statuspage.BindFlags(fs, statuspage.DefaultConfig())
	d := cell.DefaultRoutingConfig()
	overlap := fs.Float64("kv-overlap-score-weight", d.KVOverlapScoreWeight, "default profile: weight of a block to prefill against a block of decode load (overrides routing.kv_overlap_score_weight)")
	pressure := fs.Float64("kv-pressure-weight", d.KVPressureWeight, "default profile: weight of a cached block a pod is expected to evict to store the request, against a block of decode load (overrides routing.kv_pressure_weight)")
	temp := fs.Float64("router-temperature", d.RouterTemperature, "default profile: softmax temperature over normalised costs; 0 picks the lowest cost (overrides routing.router_temperature)")
	maxPromptBytes := fs.Int64("max-prompt-bytes", d.PromptLimits.MaxBytes, "override routing.prompt_limits.max_bytes: longest prompt text in bytes, checked before tokenizing (400 context_length_exceeded past it; 0: unlimited)")
	maxPromptTokens := fs.Int("max-prompt-tokens", d.PromptLimits.MaxTokens, "override routing.prompt_limits.max_tokens: most prompt tokens (400 context_length_exceeded past it; 0: unlimited)")
	busy := fs.Float64("busy-threshold", d.BusyThreshold, "default profile: skip pods whose active blocks exceed this fraction of kv_blocks (overrides routing.busy_threshold)")
	wd := cell.DefaultWatchConfig()
	firstByte := fs.Duration("first-byte-timeout", wd.FirstByteTimeout, "floor of the first-byte bound, past which a silent pod's liveness is checked and a frozen one given up for the next (overrides routing.watch.first_byte_timeout; 0: off)")
	liveTimeout := fs.Duration("liveness-timeout", wd.LivenessTimeout, "bound of a pod's liveness check (overrides routing.watch.liveness_timeout)")
	streamIdle := fs.Duration("stream-idle-timeout", wd.StreamIdleTimeout, "end a stream whose pod sent nothing for this long with an SSE error event (overrides routing.watch.stream_idle_timeout)")
	ejectBase := fs.Duration("eject-base-time", wd.EjectBaseTime, "length of a frozen or failing pod's first ejection (overrides routing.watch.eject_base_time)")
	apiKeys := fs.String("api-keys", "", "override auth.key_file: the API key file")
	tlsCert := fs.String("tls-cert", "", "override tls.cert_file: the cell's certificate (PEM)")
	tlsKey := fs.String("tls-key", "", "override tls.key_file: its private key (PEM)")
	tlsCA := fs.String("tls-ca", "", "override tls.ca_file: the CA callers' certificates chain to (PEM)")
	keyring := fs.String("gossip-keyring", "", "override gossip.keyring_file")
	indexLayout := fs.String("index-layout", "", "override index.layout: the block index's storage layout, block or paged")
	applyLimits := edge.BindFlags(fs, cell.DefaultConfig().EdgeLimits())
	memRatio := fs.Float64("memory-limit-ratio", memlimit.DefaultConfig().Ratio, "set the Go memory limit to this fraction of the container's cgroup memory limit, unless GOMEMLIMIT is set (0: off)")
	applySnapshot := cell.BindSnapshotFlags(fs)
	applyFlow := flowcontrol.BindFlags(fs)
	applyPrefixWait := cell.BindPrefixWaitFlags(fs)
	if help, err := logging.ParseFlags(fs, args, out); help || err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(out, buildinfo.Read().String("celld"))
		return nil
	}
	if *checkPath != "" {
		if *configPath != "" && *configPath != *checkPath {
			return fmt.Errorf("--check-config %s and --config %s name different files", *checkPath, *configPath)
		}
		*configPath = *checkPath
	}
	log, err := logging.New(logw, logOpts())
	if err != nil {
		return err
	}
	if err := memlimit.Setup(*memRatio, log); err != nil {
		return err
	}

	cfg := cell.DefaultConfig()
	if *configPath != "" {
		var err error
		if cfg, err = cell.LoadConfig(*configPath); err != nil {
			return err
		}
	}
	if *httpAddr != "" {
		cfg.HTTPAddr = *httpAddr
	}
	if *grpcAddr != "" {
		cfg.GRPCAddr = *grpcAddr
	}
	if *eppAddr != "" {
		cfg.EPPAddr = *eppAddr
	}
	if *cellID != "" {
		cfg.CellID = *cellID
	}
	if *replicaID != "" {
		cfg.Replica.ID = *replicaID
	}
	if *gossipAdv != "" {
		cfg.Gossip.Advertise = *gossipAdv
	}
	if *gatewayAddr != "" {
		cfg.Gossip.GatewayAddress = *gatewayAddr
	}
	if *secret != "" {
		cfg.Gossip.SecretKey = *secret
	}
	for _, o := range []struct {
		flag string
		dst  *string
	}{{*apiKeys, &cfg.Auth.KeyFile}, {*tlsCert, &cfg.TLS.CertFile}, {*tlsKey, &cfg.TLS.KeyFile}, {*tlsCA, &cfg.TLS.CAFile},
		{*keyring, &cfg.Gossip.KeyringFile}, {*indexLayout, &cfg.Index.Layout}} {
		if o.flag != "" {
			*o.dst = o.flag
		}
	}
	applySnapshot(&cfg.Snapshot)
	applyFlow(&cfg.FlowControl)
	applyPrefixWait(&cfg.Routing.PrefixWait)
	applyAccess(&cfg.AccessLog)
	applyDecisions(&cfg.Decisions)
	applyStatus(&cfg.Status)
	limits := cfg.EdgeLimits()
	applyLimits(&limits)
	cfg.SetEdgeLimits(limits)
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "kv-overlap-score-weight":
			cfg.Routing.KVOverlapScoreWeight = *overlap
		case "kv-pressure-weight":
			cfg.Routing.KVPressureWeight = *pressure
		case "router-temperature":
			cfg.Routing.RouterTemperature = *temp
		case "busy-threshold":
			cfg.Routing.BusyThreshold = *busy
		case "first-byte-timeout":
			cfg.Routing.Watch.FirstByteTimeout = *firstByte
		case "liveness-timeout":
			cfg.Routing.Watch.LivenessTimeout = *liveTimeout
		case "stream-idle-timeout":
			cfg.Routing.Watch.StreamIdleTimeout = *streamIdle
		case "eject-base-time":
			cfg.Routing.Watch.EjectBaseTime = *ejectBase
		case "max-prompt-bytes":
			cfg.Routing.PromptLimits.MaxBytes = *maxPromptBytes
		case "max-prompt-tokens":
			cfg.Routing.PromptLimits.MaxTokens = *maxPromptTokens
		}
	})
	if *checkPath != "" {
		if err := cell.CheckConfig(cfg); err != nil {
			return fmt.Errorf("%s: %w", *checkPath, err)
		}
		fmt.Fprintf(out, "%s: ok: %s\n", *checkPath, summary(cfg))
		return nil
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer flush(tel, log)
	if err := tel.Install(ctx, telemetry.Identity{Service: "celld", Instance: cfg.CellID, Cell: cfg.CellID}); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	return cell.Run(ctx, cfg, log)
}

// flush exports the spans still buffered, waiting at most a few seconds
// for an unreachable collector.
func flush(tel *telemetry.Telemetry, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		log.Warn("tracing: flush", "err", err)
	}
}

// summary describes a checked configuration in one line: what celld would
// serve, index and join.
func summary(cfg cell.Config) string {
	var sources []string
	dialed := 0
	for _, p := range cfg.Pods {
		if p.ZMQEndpoint != "" {
			dialed++
		}
	}
	if dialed > 0 {
		sources = append(sources, fmt.Sprintf("zmq dial %d pods", dialed))
	}
	if cfg.ZMQ.Bind != "" {
		sources = append(sources, "zmq bind "+cfg.ZMQ.Bind)
	}
	if cfg.NATS.URL != "" {
		sources = append(sources, "nats "+cfg.NATS.URL)
	}
	sources = append(sources, "grpc publish")
	pool := "standalone"
	if cfg.Gossip.Bind != "" {
		pool = fmt.Sprintf("gossip %s seeds %v", cfg.Gossip.Bind, cfg.Gossip.Seeds)
	}
	pods := fmt.Sprintf("%d pods", len(cfg.Pods))
	if k := cfg.Discovery.Kubernetes; k.Enabled {
		what := "selector " + strconv.Quote(k.Selector)
		if k.InferencePool != "" {
			what = "InferencePool " + k.InferencePool
		}
		pods += ", pods discovered by " + what
		if k.Namespace != "" {
			pods += " in " + k.Namespace
		}
		if k.ZMQPort > 0 {
			sources = append(sources, fmt.Sprintf("zmq dial discovered pods on :%d", k.ZMQPort))
		}
	}
	return fmt.Sprintf("cell %s, http %s, grpc %s, %s, events from %s, profile %q, %s, replica %s",
		cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, pods, strings.Join(sources, ", "), profileName(cfg.Routing), pool, cfg.Replica.ID)
}

func profileName(r cell.RoutingConfig) string {
	if r.PrefillProfile != "" {
		return r.PrefillProfile + "+" + r.DecodeProfile
	}
	return r.Profile
}
