package global

import (
	"fmt"
	"net"
	"slices"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/statuspage"
)

// Config configures a global router.
type Config struct {
	// HTTPAddr serves the OpenAI data plane, /metrics, /healthz, /readyz
	// and REST of GlobalService; GRPCAddr serves GlobalService.
	HTTPAddr, GRPCAddr string
	// EPPAddr, when set, serves the Endpoint Picker Protocol (an Envoy
	// ext_proc gRPC server, package internal/epp) for a global gateway:
	// globald decides as its data plane does and answers with the chosen
	// cell's gateway (the cells' gossip.gateway_address), then the next
	// cells' gateways as fallbacks. Empty (the default): off.
	EPPAddr string
	// BlockSize is the cells' router block size: the global tier hashes
	// requests exactly as cells do, or summaries never match.
	BlockSize int
	// Tokenize says how text prompts and chats become token ids.
	Tokenize TokenizeConfig
	// Search and Choose tune candidate search and the choice among probes.
	Search SearchConfig
	Choose ChooseConfig
	// Bands says how the cells' waits per priority band weigh in the
	// choice and when a sheddable request is refused before the hand-off.
	Bands BandsConfig
	// ProbeTimeout bounds each probe; a cell that does not answer in time
	// is treated as failed for this request.
	ProbeTimeout time.Duration
	// ProbeLone probes a candidate even when the summary search found no
	// other (a fleet of one usable cell, or one cell knowing the prefix
	// with no other usable cell), which changes no decision; by default
	// the data plane hands such a request off at once. The dry run always
	// probes.
	ProbeLone bool
	// RoutedLoadTTL bounds how long the load the router adds to a cell by
	// its own hand-offs (CellLoad.Routed) stands in for the cell's gossiped
	// load: it is dropped when the cell gossips another load, and at the
	// latest RoutedLoadTTL after the first hand-off it counts. Keep it above
	// the cells' gossip.summary_interval plus a few gossip rounds. Default
	// 5s.
	RoutedLoadTTL time.Duration
	// ConnectTimeout, ResponseHeaderTimeout and RequestTimeout bound the
	// hand-off; MaxAttempts is the cells tried before the first byte.
	ConnectTimeout, ResponseHeaderTimeout, RequestTimeout time.Duration
	MaxAttempts                                           int
	// Watch bounds the waits on cell replicas that stopped answering (a
	// frozen celld): past the first-byte bound the replica's /healthz is
	// checked, a replica that does not answer is given up for the next
	// while nothing reached the client (its stream ends with an SSE error
	// event otherwise), and it is ejected from hand-offs and probes until it
	// answers again. See "Frozen targets" in package proxy. Defaults:
	// proxy.DefaultWatchConfig with LivenessPath "/healthz" and a
	// StreamIdleTimeout of 90s, above the cells' own 60s, so a cell's
	// word on its pod's silence arrives first.
	Watch proxy.WatchConfig
	// MaxIdleConnsPerCell is the keep-alive connections kept open to each
	// cell for hand-offs. A global tier sends all its concurrency to a few
	// cells, so this is far above a cell's per-pod figure: with fewer, a
	// burst of concurrent requests closes and redials connections (and
	// leaves sockets in TIME_WAIT) at every step. Default 1024.
	MaxIdleConnsPerCell int
	// ShutdownTimeout bounds the graceful stop.
	ShutdownTimeout time.Duration
	// RelayResponseHeaders are the cells' response headers relayed to the
	// client (a trailing "*" matches a prefix), besides the router's own
	// X-Cellrouter-* headers, which always pass (the cell and pod that
	// served, the matched blocks); the rest, and any whose value names the
	// cell's host, are dropped. Default proxy.DefaultRelayResponseHeaders.
	RelayResponseHeaders []string
	// Limits bound what one client may hold of globald's servers (request
	// body and head, slow clients, idle connections, concurrent streams).
	Limits edge.Limits
	// Security configures API keys and the TLS of globald's hops.
	Security SecurityConfig
	// Prompts bound each model's prompt: its text before globald
	// tokenizes it and its tokens after (400 context_length_exceeded past
	// either), so that a huge prompt costs no tokenizer time.
	Prompts openai.PromptLimits
	// AccessLog switches and samples the access log: a line at info per
	// data-plane request with its route path, cell, pod, matched blocks,
	// status and durations (package internal/logging).
	AccessLog logging.AccessConfig
	// Decisions sizes the ring of recent routing decisions served at
	// GET /v1/global/decisions with their explanations (Size 0: off;
	// TopK: the cells kept per explanation; package internal/decisions).
	Decisions decisions.Config
	// Status configures the GET /status page: how often it reloads
	// itself and where its trace ids link to (statuspage.Config;
	// --status-refresh, --trace-url-template).
	Status statuspage.Config
}

// DefaultConfig returns the defaults globald starts from.
func DefaultConfig() Config {
	p := proxy.DefaultConfig()
	return Config{
		HTTPAddr:              "127.0.0.1:8090",
		GRPCAddr:              "127.0.0.1:8091",
		BlockSize:             blockhash.DefaultBlockSize,
		Tokenize:              DefaultTokenizeConfig(),
		Search:                DefaultSearchConfig(),
		Choose:                DefaultChooseConfig(),
		Bands:                 DefaultBandsConfig(),
		ProbeTimeout:          50 * time.Millisecond,
		RoutedLoadTTL:         DefaultRoutedLoadTTL,
		ConnectTimeout:        p.ConnectTimeout,
		ResponseHeaderTimeout: p.ResponseHeaderTimeout,
		RequestTimeout:        p.RequestTimeout,
		MaxAttempts:           3,
		MaxIdleConnsPerCell:   1024,
		ShutdownTimeout:       5 * time.Second,
		Limits:                edge.DefaultLimits(),
		Watch:                 defaultWatch(),
		Prompts:               openai.DefaultPromptLimits(),
		RelayResponseHeaders:  p.RelayResponseHeaders,
		AccessLog:             logging.DefaultAccessConfig(),
		Decisions:             decisions.DefaultConfig(),
		Status:                statuspage.DefaultConfig(),
	}
}

// defaultWatch is the global tier's watch of its cells: the proxy's
// defaults, checking a cell's /healthz, with a stream idle bound above the
// cells' own.
func defaultWatch() proxy.WatchConfig {
	w := proxy.DefaultWatchConfig()
	w.LivenessPath = "/healthz"
	w.StreamIdleTimeout = 90 * time.Second
	return w
}

// Validate reports the first invalid field with its value.
func (c Config) Validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrInvalidConfig, field, v, why)
	}
	for _, a := range []struct{ f, v string }{{"http_addr", c.HTTPAddr}, {"grpc_addr", c.GRPCAddr}} {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return bad(a.f, fmt.Sprintf("%q", a.v), "want host:port")
		}
	}
	if c.EPPAddr != "" {
		if _, _, err := net.SplitHostPort(c.EPPAddr); err != nil {
			return bad("epp_addr", fmt.Sprintf("%q", c.EPPAddr), "want host:port")
		}
	}
	if err := c.AccessLog.Validate(); err != nil {
		return bad("access_log.sample", c.AccessLog.Sample, "want 0 to 1")
	}
	if err := c.Decisions.Validate("decisions"); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := c.Status.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	switch {
	case c.BlockSize < blockhash.MinBlockSize || c.BlockSize > blockhash.MaxBlockSize:
		return bad("block_size", c.BlockSize, "out of range")
	case c.Search.MaxProbes < 1:
		return bad("max_probes", c.Search.MaxProbes, "want >= 1")
	case c.Search.Slack < 0:
		return bad("probe_slack", c.Search.Slack, "want >= 0")
	case !(c.Search.FullAt > 0 && c.Search.FullAt <= 1):
		return bad("full_at", c.Search.FullAt, "want in (0, 1]")
	case c.Search.ColdBlocks < 1:
		return bad("cold_blocks", c.Search.ColdBlocks, "want >= 1")
	case c.Choose.PrefillWeight < 0 || c.Choose.RTTWeight < 0:
		return bad("choose weights", c.Choose, "must not be negative")
	case !(c.Choose.MoveWeight >= 0):
		return bad("move_weight", c.Choose.MoveWeight, "want >= 0")
	case !(c.Choose.PressureWeight >= 0):
		return bad("pressure_weight", c.Choose.PressureWeight, "want >= 0")
	case c.ProbeTimeout <= 0:
		return bad("probe_timeout", c.ProbeTimeout, "must be positive")
	case c.RoutedLoadTTL <= 0:
		return bad("routed_load_ttl", c.RoutedLoadTTL, "must be positive")
	case c.MaxAttempts < 1:
		return bad("max_attempts", c.MaxAttempts, "want >= 1")
	case c.MaxIdleConnsPerCell < 0:
		return bad("max_idle_conns_per_cell", c.MaxIdleConnsPerCell, "must not be negative")
	case c.ShutdownTimeout <= 0:
		return bad("shutdown_timeout", c.ShutdownTimeout, "must be positive")
	}
	if err := c.Bands.Validate(); err != nil {
		return err
	}
	if err := c.Tokenize.Validate(); err != nil {
		return err
	}
	if err := c.Limits.Validate(""); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := c.Prompts.Validate("prompts"); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := c.Security.validate(); err != nil {
		return err
	}
	return c.proxyConfig().Validate()
}

// RouterHeaders are the response headers a cell adds as part of the
// router (X-Cellrouter-Cell, X-Cellrouter-Pod, the matched blocks): they
// always reach globald's clients.
const RouterHeaders = "X-Cellrouter-*"

func (c Config) proxyConfig() proxy.Config {
	p := proxy.DefaultConfig()
	p.ConnectTimeout, p.ResponseHeaderTimeout, p.RequestTimeout, p.MaxAttempts = c.ConnectTimeout, c.ResponseHeaderTimeout, c.RequestTimeout, c.MaxAttempts*ReplicaAttempts
	p.MaxIdleConnsPerHost = c.MaxIdleConnsPerCell
	p.Watch = c.Watch
	p.RelayResponseHeaders = append(slices.Clip(c.RelayResponseHeaders), RouterHeaders)
	return p
}
