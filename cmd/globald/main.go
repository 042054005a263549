package main

import (
	"context"
	"errors"
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

	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/memlimit"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/statuspage"
	"github.com/cellrouter/cellrouter/internal/telemetry"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/loadtest/fleet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if len(os.Args) > 1 && os.Args[1] == "keygen" {
		err = keygen(os.Args[2:], os.Stdout, os.Stderr)
	} else {
		err = run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "globald:", err)
		os.Exit(1)
	}
}

type seeds []string

func (s *seeds) String() string     { return strings.Join(*s, ",") }
func (s *seeds) Set(v string) error { *s = append(*s, v); return nil }

// tokenizers collects repeated --tokenizer flags.
type tokenizers []global.ModelTokenizer

func (t *tokenizers) String() string { return fmt.Sprint(len(*t), " tokenizers") }
func (t *tokenizers) Set(v string) error {
	m, err := global.ParseModelTokenizer(v)
	if err != nil {
		return err
	}
	*t = append(*t, m)
	return nil
}

// promptLimits collects repeated --prompt-limit flags.
type promptLimits map[string]openai.PromptLimit

func (p promptLimits) String() string { return fmt.Sprint(len(p), " models") }

// Set parses MODEL=MAX_BYTES,MAX_TOKENS (0 or an empty field: the
// default's).
func (p promptLimits) Set(v string) error {
	model, limits, ok := strings.Cut(v, "=")
	b, t, ok2 := strings.Cut(limits, ",")
	if !ok || !ok2 || model == "" {
		return fmt.Errorf("want MODEL=MAX_BYTES,MAX_TOKENS, got %q", v)
	}
	var l openai.PromptLimit
	var err error
	if b != "" {
		if l.MaxBytes, err = strconv.ParseInt(b, 10, 64); err != nil {
			return fmt.Errorf("%q: MAX_BYTES: %w", v, err)
		}
	}
	if t != "" {
		if l.MaxTokens, err = strconv.Atoi(t); err != nil {
			return fmt.Errorf("%q: MAX_TOKENS: %w", v, err)
		}
	}
	p[model] = l
	return nil
}

// run starts the daemon (or the demo fleet) as args say, printing the
// demo's instructions to out and logging to logw, and serves until ctx ends.
func run(ctx context.Context, args []string, out, logw io.Writer) error {
	fs := flag.NewFlagSet("globald", flag.ContinueOnError)
	fs.SetOutput(logw)
	d := global.DefaultConfig()
	p := global.DefaultPoolConfig()
	demo := fs.Bool("demo", false, "start a local fleet (simulated pods, cells, this endpoint) on an embedded default")
	demoCells := fs.Int("demo-cells", 2, "cells in the demo fleet")
	demoPods := fs.Int("demo-pods", 4, "simulated pods per demo cell")
	httpAddr := fs.String("http-addr", d.HTTPAddr, "OpenAI data plane, /metrics, /healthz, /readyz, REST control plane")
	grpcAddr := fs.String("grpc-addr", d.GRPCAddr, "gRPC GlobalService")
	eppAddr := fs.String("epp-addr", d.EPPAddr, "serve the Endpoint Picker Protocol (Envoy ext_proc) for a global gateway at host:port, answering with the chosen cell's gateway; empty: off")
	blockSize := fs.Int("block-size", d.BlockSize, "the cells' router block size in tokens")
	maxProbes := fs.Int("max-probes", d.Search.MaxProbes, "most cells probed per request")
	slack := fs.Int("probe-slack", d.Search.Slack, "also probe cells whose estimate is within this many blocks of the best")
	coldBlocks := fs.Int("cold-blocks", d.Search.ColdBlocks, "leading blocks that name a cold prompt for the two-choice hash")
	probeTimeout := fs.Duration("probe-timeout", d.ProbeTimeout, "deadline of one probe")
	probeLone := fs.Bool("probe-lone", d.ProbeLone, "probe a cell even when the summary search found no other candidate (by default such a request is handed off at once)")
	routedTTL := fs.Duration("routed-load-ttl", d.RoutedLoadTTL, "longest time the load globald adds to a cell by its own hand-offs counts before the cell's gossiped load alone does (keep above the cells' summary interval)")
	prefillW := fs.Float64("prefill-weight", d.Choose.PrefillWeight, "cost of a block to prefill against a block of load")
	pressureW := fs.Float64("pressure-weight", d.Choose.PressureWeight, "cost of a cached block a cell's pick is expected to evict to store the request (its probe answer's evict_blocks); set it to the cells' routing.kv_pressure_weight")
	fullAt := fs.Float64("full-at", d.Search.FullAt, "the estimated cache fullness (a cell's summary blocks over its KV blocks) at which the search counts a cell as full, in (0, 1]: below it fuller cells cost more, above it all cost alike and load decides")
	moveW := fs.Float64("move-weight", d.Choose.MoveWeight, "cost to the fleet of a block of prefix copied to a cell when another probed cell holds it, on top of its prefill (a follow-up leaves its prefix's cell only when the load gap outweighs both)")
	coldProbe := fs.Bool("probe-cold", d.Search.ProbeCold, "probe a cold prompt's hashed cells (--max-probes of them, from 2) and take the cheapest; false hands it to the less loaded of two, unprobed")
	avoidBusy := fs.Bool("avoid-busy", d.Choose.AvoidBusy, "put a cell whose pick is busy (every pod of the cell above its busy threshold) after every cell whose pick is not, whatever the costs; false weighs the busy pick's load in its cost like any other and lets busy break ties only")
	rttW := fs.Float64("rtt-weight", d.Choose.RTTWeight, "cost of a millisecond of probe round trip, in blocks")
	waitW := fs.Float64("wait-weight", d.Bands.WaitWeight, "cost of a millisecond a cell announces a request of its priority band would wait there, in blocks (0: ignore the cells' waits)")
	shedAfter := fs.Duration("shed-after", d.Bands.ShedAfter, "refuse a sheddable request with 429 before the hand-off when every cell announces a longer wait for the sheddable band (negative: never)")
	bandAge := fs.Duration("band-wait-max-age", d.Bands.MaxAge, "how long a cell's announced band waits count without a refresh")
	attempts := fs.Int("max-attempts", d.MaxAttempts, "cells tried before the first byte")
	reqTimeout := fs.Duration("request-timeout", d.RequestTimeout, "bound of a whole hand-off")
	firstByte := fs.Duration("first-byte-timeout", d.Watch.FirstByteTimeout, "floor of the first-byte bound of a hand-off, past which a silent cell replica's /healthz is checked and a frozen one given up for the next (0: off)")
	firstByteFactor := fs.Float64("first-byte-factor", d.Watch.FirstByteFactor, "the bound is this many times the p99 of the replica's observed time to first byte, at least --first-byte-timeout")
	firstByteMax := fs.Duration("first-byte-timeout-max", d.Watch.FirstByteTimeoutMax, "cap of the first-byte bound")
	livePath := fs.String("liveness-path", d.Watch.LivenessPath, "path of a cell replica's liveness check")
	liveTimeout := fs.Duration("liveness-timeout", d.Watch.LivenessTimeout, "bound of a cell replica's liveness check")
	streamIdle := fs.Duration("stream-idle-timeout", d.Watch.StreamIdleTimeout, "end a stream whose cell sent nothing for this long with an SSE error event")
	ejectFails := fs.Int("eject-consecutive-failures", d.Watch.Ejection.ConsecutiveFailures, "failures in a row (hand-offs or probes) that eject a cell replica; a frozen one is ejected at once (0: no ejection)")
	ejectBase := fs.Duration("eject-base-time", d.Watch.Ejection.BaseEjectionTime, "length of a replica's first ejection, times its ejections in a row")
	ejectMax := fs.Duration("eject-max-time", d.Watch.Ejection.MaxEjectionTime, "cap of an ejection's length")
	ejectPct := fs.Int("eject-max-percent", d.Watch.Ejection.MaxEjectionPercent, "largest share of a hand-off's replicas ranked last for being ejected")
	idlePerCell := fs.Int("max-idle-conns-per-cell", d.MaxIdleConnsPerCell, "keep-alive connections kept open to each cell for hand-offs")
	gossipBind := fs.String("gossip-bind", p.Bind, "memberlist address")
	gossipAdv := fs.String("gossip-advertise", "", "address other nodes reach this one at")
	secret := fs.String("gossip-secret-key", "", "base64 pool encryption key (16, 24 or 32 bytes)")
	gossipName := fs.String("gossip-name", "", "this replica's name in the pool, unique per replica (default global/<http address>)")
	probeEvery := fs.Duration("gossip-probe-interval", p.ProbeInterval, "memberlist failure detection: how often a member is probed")
	probeWait := fs.Duration("gossip-probe-timeout", p.ProbeTimeout, "memberlist failure detection: how long a probe waits (below the interval)")
	suspicion := fs.Int("gossip-suspicion-mult", gossip.DefaultConfig().SuspicionMult, "memberlist failure detection: a suspect has this many probe intervals to refute")
	rejoinEvery := fs.Duration("gossip-rejoin-interval", p.RejoinInterval, "how often the seeds and the members this replica knew are joined again while they are not in the pool")
	rejoinMax := fs.Duration("gossip-rejoin-max-interval", p.RejoinMaxInterval, "cap of the rejoin backoff while they do not answer")
	rememberN := fs.Int("gossip-remember-members", p.RememberMembers, "departed members whose last addresses are rejoined (negative: none)")
	rememberFor := fs.Duration("gossip-remember-for", p.RememberFor, "how long a departed member is rejoined before it is forgotten")
	version := fs.Bool("version", false, "print the version and exit")
	var seedList seeds
	fs.Var(&seedList, "seed", "gossip pool member to join (repeatable)")
	var toks tokenizers
	fs.Var(&toks, "tokenizer", "MODEL=PATH[,CHAT_TEMPLATE]: tokenize the model's text prompts and chats in process with the tokenizer.json and "+
		"built-in chat template its cells use (repeatable); other models go to a cell's /tokenize")
	remoteTok := fs.Bool("remote-tokenize", d.Tokenize.Remote, "ask a cell's /tokenize for text prompts and chats no --tokenizer covers (false: route them cold)")
	tokTimeout := fs.Duration("tokenize-timeout", d.Tokenize.RemoteTimeout, "bound of one remote tokenization (then the request goes cold)")
	tokCache := fs.Int64("tokenize-cache-mb", d.Tokenize.CacheBytes>>20, "memory bound of the tokenization cache in MiB (0: off)")
	logOpts := logging.BindFlags(fs, logging.DefaultOptions())
	applyAccess := logging.BindAccessFlags(fs, d.AccessLog)
	applyDecisions := decisions.BindFlags(fs, d.Decisions)
	applyStatus := statuspage.BindFlags(fs, d.Status)
	apiKeys := fs.String("api-keys", "", "API key file (tenants, limits, key hashes and scopes; see README): keys required on every endpoint but health")
	tlsCert := fs.String("tls-cert", "", "globald's certificate (PEM): with --tls-key and --tls-ca, every hop to a cell is mutual TLS")
	tlsKey := fs.String("tls-key", "", "the certificate's private key (PEM)")
	tlsCA := fs.String("tls-ca", "", "the CA (PEM) the cells' certificates chain to")
	tlsName := fs.String("tls-server-name", "", "the name the cells' certificates carry (default: the host of each cell's address)")
	serveTLS := fs.Bool("serve-tls", false, "also serve globald's own HTTP and gRPC listeners over TLS with --tls-cert")
	keyring := fs.String("gossip-keyring", "", "gossip keyring file, one base64 key a line, the first the primary (instead of --gossip-secret-key); reloaded on change")
	reloadEvery := fs.Duration("reload-interval", 0, "how often the key file, the TLS files and the keyring are read again (0: 2s)")
	relayHeaders := fs.String("relay-response-headers", strings.Join(d.RelayResponseHeaders, ","),
		"comma-separated response headers of the cells relayed to clients (a trailing * matches a prefix); the router's X-Cellrouter-* always are")
	applyLimits := edge.BindFlags(fs, d.Limits)
	maxPromptBytes := fs.Int64("max-prompt-bytes", d.Prompts.MaxBytes, "longest prompt text (a prompt string, a chat's contents together) in bytes, checked before tokenizing; past it 400 context_length_exceeded (0: unlimited)")
	maxPromptTokens := fs.Int("max-prompt-tokens", d.Prompts.MaxTokens, "most prompt tokens (ids given or tokenized); past it 400 context_length_exceeded (0: unlimited)")
	perModel := promptLimits{}
	fs.Var(perModel, "prompt-limit", "MODEL=MAX_BYTES,MAX_TOKENS: the prompt limits of one model (repeatable; an empty or 0 field takes --max-prompt-bytes or --max-prompt-tokens)")
	memRatio := fs.Float64("memory-limit-ratio", memlimit.DefaultConfig().Ratio, "set the Go memory limit to this fraction of the container's cgroup memory limit, unless GOMEMLIMIT is set (0: off)")
	if help, err := logging.ParseFlags(fs, args, out); help || err != nil {
		return err
	}
	if *version {
		fmt.Fprintln(out, buildinfo.Read().String("globald"))
		return nil
	}
	log, err := logging.New(logw, logOpts())
	if err != nil {
		return err
	}
	if err := memlimit.Setup(*memRatio, log); err != nil {
		return err
	}
	tel, err := telemetry.Setup(ctx)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer flush(tel, log)

	if *demo {
		return runDemo(ctx, tel, *demoCells, *demoPods, *httpAddr, *grpcAddr, out, log)
	}
	applyLimits(&d.Limits)
	applyAccess(&d.AccessLog)
	applyDecisions(&d.Decisions)
	applyStatus(&d.Status)
	d.Prompts = openai.PromptLimits{MaxBytes: *maxPromptBytes, MaxTokens: *maxPromptTokens, Models: perModel}
	d.Security = global.SecurityConfig{KeyFile: *apiKeys, ReloadInterval: *reloadEvery, ServeTLS: *serveTLS,
		TLS: tlsconf.Config{CertFile: *tlsCert, KeyFile: *tlsKey, CAFile: *tlsCA, ServerName: *tlsName}}
	cfg := d
	cfg.HTTPAddr, cfg.GRPCAddr, cfg.BlockSize = *httpAddr, *grpcAddr, *blockSize
	cfg.EPPAddr = *eppAddr
	cfg.Search.MaxProbes, cfg.Search.Slack, cfg.Search.ColdBlocks = *maxProbes, *slack, *coldBlocks
	cfg.RoutedLoadTTL = *routedTTL
	cfg.ProbeTimeout, cfg.Choose.PrefillWeight, cfg.Choose.RTTWeight = *probeTimeout, *prefillW, *rttW
	cfg.Bands = global.BandsConfig{WaitWeight: *waitW, ShedAfter: *shedAfter, MaxAge: *bandAge}
	cfg.Choose.MoveWeight, cfg.Search.ProbeCold = *moveW, *coldProbe
	cfg.Choose.PressureWeight, cfg.Choose.AvoidBusy = *pressureW, *avoidBusy
	cfg.Search.FullAt = *fullAt
	cfg.RelayResponseHeaders = splitList(*relayHeaders)
	cfg.MaxAttempts, cfg.RequestTimeout, cfg.ProbeLone, cfg.MaxIdleConnsPerCell = *attempts, *reqTimeout, *probeLone, *idlePerCell
	cfg.Watch.FirstByteTimeout, cfg.Watch.FirstByteFactor, cfg.Watch.FirstByteTimeoutMax = *firstByte, *firstByteFactor, *firstByteMax
	cfg.Watch.LivenessPath, cfg.Watch.LivenessTimeout, cfg.Watch.StreamIdleTimeout = *livePath, *liveTimeout, *streamIdle
	cfg.Watch.Ejection = proxy.EjectionConfig{ConsecutiveFailures: *ejectFails, BaseEjectionTime: *ejectBase, MaxEjectionTime: *ejectMax, MaxEjectionPercent: *ejectPct}
	cfg.Tokenize.Models, cfg.Tokenize.Remote, cfg.Tokenize.RemoteTimeout, cfg.Tokenize.CacheBytes = toks, *remoteTok, *tokTimeout, *tokCache<<20
	pool := p
	pool.Bind, pool.Advertise, pool.SecretKey, pool.Seeds = *gossipBind, *gossipAdv, *secret, seedList
	pool.Name = *gossipName
	pool.ProbeInterval, pool.ProbeTimeout, pool.SuspicionMult = *probeEvery, *probeWait, *suspicion
	pool.RejoinInterval, pool.RejoinMaxInterval, pool.RememberMembers, pool.RememberFor = *rejoinEvery, *rejoinMax, *rememberN, *rememberFor
	pool.KeyringFile, pool.ReloadInterval = *keyring, *reloadEvery
	dmn, err := global.NewDaemon(cfg, pool, log)
	if err != nil {
		return err
	}
	// The replica's identity in traces is its pool name, known once the
	// daemon is built; its spans follow the global provider installed now.
	if err := tel.Install(ctx, telemetry.Identity{Service: "globald", Instance: dmn.NodeName()}); err != nil {
		stopped, cancel := context.WithCancel(ctx)
		cancel()
		dmn.Run(stopped) // closes the listeners and leaves the pool
		return fmt.Errorf("tracing: %w", err)
	}
	log.Info("globald", "gossip", dmn.GossipAddr(), "name", dmn.NodeName())
	return dmn.Run(ctx)
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

// runDemo starts the local fleet and prints a request to try. With tracing
// on, each cell exports under its own identity (service.name celld,
// service.instance.id its cell id) and the global router under globald's.
func runDemo(ctx context.Context, tel *telemetry.Telemetry, cells, pods int, httpAddr, grpcAddr string, out io.Writer, log *slog.Logger) error {
	cfg := fleet.DefaultConfig()
	cfg.Cells, cfg.PodsPerCell, cfg.GlobalHTTPAddr, cfg.GlobalGRPCAddr = cells, pods, httpAddr, grpcAddr
	cfg.Secure = true
	cfg.Log = log.With("demo", true)
	if tel.Enabled() {
		cfg.TracerProvider = func(id telemetry.Identity) (trace.TracerProvider, error) { return tel.Provider(ctx, id) }
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	f, err := fleet.Start(sctx, cfg) // on an error, Start has closed what it started
	cancel()
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("demo: %w: another process holds the port; choose another with --http-addr or --grpc-addr", err)
		}
		return fmt.Errorf("demo: %w", err)
	}
	defer f.Close()
	if err := tel.Install(ctx, telemetry.Identity{Service: "globald", Instance: f.Global.NodeName()}); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	body := fleet.ExampleChat(cfg.Pod.Model)
	fmt.Fprintf(out, "cellrouter demo: %d cells x %d simulated pods behind %s\n\n", cells, pods, f.Endpoint())
	for i, c := range f.Cells {
		fmt.Fprintf(out, "  cell-%d  https://%s  grpc %s  (%d pods; mutual TLS: only globald gets in)\n", i, c.HTTPAddr(), c.GRPCAddr(), len(f.Pods[i]))
	}
	fmt.Fprintf(out, "  global  grpc %s\n", f.Global.GRPCAddr())
	fmt.Fprintf(out, `
API key (tenant %q, scopes inference and admin; key file %s):

  export CELLROUTER_API_KEY=%s

Try a chat (send it twice: the global tier tokenizes it as the cells and pods do, so the
second send is routed by summary to the same pod and reports cached tokens):

  curl -s %s/v1/chat/completions -H "Authorization: Bearer $CELLROUTER_API_KEY" -H 'Content-Type: application/json' \
    -d '%s' -D - | grep -iE 'x-cellrouter|cached_tokens|^{'

  curl -s %s/v1/models              # without the key: 401 in OpenAI's error shape
  curl -s -H "Authorization: Bearer $CELLROUTER_API_KEY" %s/v1/global/cells        # the cells and their summaries
  curl -s -H "Authorization: Bearer $CELLROUTER_API_KEY" %s/metrics | grep cellrouter_global_requests   # path="summary_chat" on the second send
  curl -s -H "Authorization: Bearer $CELLROUTER_API_KEY" %s/status > globald-status.html   # the fleet's status page (a browser needs the header added)
  curl -s -H "Authorization: Bearer $CELLROUTER_API_KEY" %s/v1/global/decisions   # the last decisions, each explained
  curl -s %s/openapi/global.swagger.json   # the OpenAPI document: the REST control plane and the OpenAI data plane
  grpcurl -plaintext -H "authorization: Bearer $CELLROUTER_API_KEY" %s list        # the gRPC services, by server reflection

The demo's tenant is isolated: its prompts are cached under its own salt, in the pods, the
cells' indexes and the summaries. Ctrl-C stops everything.
`, fleet.DemoTenant, f.KeyFile, f.APIKey, f.Endpoint(), body, f.Endpoint(), f.Endpoint(), f.Endpoint(), f.Endpoint(), f.Endpoint(), f.Endpoint(), f.Global.GRPCAddr())
	printCellAccess(out, f)
	<-ctx.Done()
	return nil
}

// printCellAccess tells how to reach the demo's cells, which serve over
// mutual TLS only: with the operator certificate the demo wrote (role
// admin), curl reads a cell's state, pods and metrics and grpcurl lists
// its services by reflection.
func printCellAccess(out io.Writer, f *fleet.Fleet) {
	if len(f.Cells) == 0 || f.AdminTLS.CertFile == "" {
		return
	}
	a := f.AdminTLS
	c := f.Cells[0]
	fmt.Fprintf(out, `
The cells take mutual TLS only. The demo wrote an operator's client certificate (role admin):

  export CELLROUTER_TLS="--cacert %s --cert %s --key %s"

  curl -s $CELLROUTER_TLS https://%s/v1/cell/state     # cell-0: pods by state, indexed blocks, events
  curl -s $CELLROUTER_TLS https://%s/v1/cell/pods
  curl -s $CELLROUTER_TLS https://%s/status > cell-0-status.html   # cell-0's status page
  curl -s $CELLROUTER_TLS https://%s/metrics | grep cellrouter_route
  grpcurl -cacert %s -cert %s -key %s %s list   # the cell's gRPC services, by reflection
`, a.CAFile, a.CertFile, a.KeyFile, c.HTTPAddr(), c.HTTPAddr(), c.HTTPAddr(), c.HTTPAddr(), a.CAFile, a.CertFile, a.KeyFile, c.GRPCAddr())
	if len(f.Cells) > 1 {
		fmt.Fprintln(out, "\n  (the other cells likewise, at the addresses listed above)")
	}
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(v string) []string {
	var out []string
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
