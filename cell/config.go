package cell

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cellrouter/cellrouter/cell/enginemetrics"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/natsjs"
	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/statuspage"
)

// Config is celld's configuration, read from YAML (see
// cell/testdata/celld.example.yaml for a documented example).
type Config struct {
	// CellID names the cell in metrics, state and (later) gossip.
	CellID string `yaml:"cell_id"`
	// HTTPAddr is the HTTP listen address: /metrics, /healthz, /readyz and
	// the REST form of the gRPC services. Port 0 picks a free port.
	HTTPAddr string `yaml:"http_addr"`
	// GRPCAddr is the gRPC listen address: EventPublisher and CellService.
	GRPCAddr string `yaml:"grpc_addr"`
	// EPPAddr is the listen address of the Endpoint Picker (a gRPC
	// envoy.service.ext_proc.v3.ExternalProcessor a gateway calls to pick
	// a pod, with the same TLS as grpc_addr); empty (the default) serves
	// none. See run_epp.go.
	EPPAddr string `yaml:"epp_addr"`

	// Index configures the block index.
	Index IndexConfig `yaml:"index"`
	// Events configures event translation and pod liveness.
	Events EventsConfig `yaml:"events"`
	// Pods are the pods the cell knows from configuration; the events of
	// pods that are not listed are dropped, unless
	// events.accept_unknown_pods discovers them.
	Pods []PodConfig `yaml:"pods"`
	// Discovery finds more pods (config_discovery.go): they combine with
	// Pods, a static pod winning over a discovered one of its id.
	Discovery DiscoveryConfig `yaml:"discovery"`
	// Approximate configures the approximate index of pods without events.
	Approximate ApproximateConfig `yaml:"approximate"`
	// Speculative configures speculative entries written at routing time.
	Speculative SpeculativeConfig `yaml:"speculative"`
	// EngineMetrics configures the scraping of the engines' own load
	// metrics and the engine load plug-ins (run_enginemetrics.go).
	EngineMetrics enginemetrics.Config `yaml:"engine_metrics"`
	// FlowControl holds requests whose pods are saturated in a queue that
	// is strict between priority bands and fair between tenants
	// (run_flowcontrol.go, package cell/flowcontrol).
	FlowControl flowcontrol.Config `yaml:"flow_control"`

	// ZMQ configures the vLLM/SGLang ZMQ transport; it runs when Bind is
	// set or any pod has a ZMQ endpoint.
	ZMQ ZMQConfig `yaml:"zmq"`
	// NATS configures the NATS JetStream transport; it runs when URL is set.
	NATS NATSConfig `yaml:"nats"`

	// Snapshot persists the index state across restarts (snapshot_config.go).
	Snapshot SnapshotConfig `yaml:"snapshot"`

	// Gossip joins the cell to the global tier's pool.
	Gossip GossipConfig `yaml:"gossip"`
	// Replica says which replica of the cell this celld is (run_replicas.go).
	Replica ReplicaConfig `yaml:"replica"`
	// Routing configures the routing pipeline and the data plane.
	Routing RoutingConfig `yaml:"routing"`

	// Auth configures API keys; TLS mutual TLS and TLS to the pods;
	// Limits what one client may hold of the servers (see run_security.go).
	Auth   AuthConfig   `yaml:"auth"`
	TLS    TLSConfig    `yaml:"tls"`
	Limits LimitsConfig `yaml:"limits"`
	// AccessLog switches and samples the access log: a line at info per
	// data-plane request with its match source, pod, matched blocks,
	// status and durations (keys enabled and sample; package
	// internal/logging).
	AccessLog logging.AccessConfig `yaml:"access_log"`
	// Decisions sizes the ring of recent routing decisions served at
	// GET /v1/cell/decisions with their explanations (keys size, 0 off,
	// and top_k, the pods kept per explanation; package
	// internal/decisions).
	Decisions decisions.Config `yaml:"decisions"`
	// Status configures the GET /status page: how often it reloads
	// itself and where its trace ids link to (statuspage.Config).
	Status statuspage.Config `yaml:"status"`

	// TickInterval is how often the cell checks for pods that went silent.
	TickInterval time.Duration `yaml:"tick_interval"`
	// HealthInterval is how often the cell probes each configured pod's
	// GET /health; 0 turns health checks off.
	HealthInterval time.Duration `yaml:"health_interval"`
	// HealthTimeout bounds one health probe.
	HealthTimeout time.Duration `yaml:"health_timeout"`
	// ShutdownTimeout bounds the graceful stop of the servers.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
}

// IndexConfig configures the block index (see index.Config).
type IndexConfig struct {
	// MaxBlocks caps the distinct blocks indexed; new blocks past it are
	// refused and counted (cellrouter_index_cap_drops_total).
	MaxBlocks int `yaml:"max_blocks"`
	// SweepWorkers bounds the shards swept in parallel after a pod dies.
	SweepWorkers int `yaml:"sweep_workers"`
	// ExpectedBlocks pre-sizes the index tables (index.Config
	// ExpectedBlocks): 0 means the sum of the pods' kv_blocks (no more
	// distinct blocks can be cached at once), capped at max_blocks; -1 means
	// no pre-sizing (tables grow from empty); a positive value is used as
	// given and must not exceed max_blocks.
	ExpectedBlocks int `yaml:"expected_blocks"`
	// Layout is the index's storage layout (index.Config Layout): "paged"
	// (the cell's default), whose queries read a chain's blocks a page of
	// index.PageSize positions at a time, or "block" ("" is block too, as in
	// package index; DefaultConfig sets paged). Paged won on throughput,
	// memory and query latency side by side (loadtest index --layout both).
	Layout string `yaml:"layout"`
}

// EventsConfig configures the event applier (see events.Config).
type EventsConfig struct {
	// BlockSize is the router's block size in tokens; engines may use
	// another one.
	BlockSize int `yaml:"block_size"`
	// DefaultModel is the model of events whose publisher names none.
	DefaultModel string `yaml:"default_model"`
	// Models, when set, is the allow-list of served models.
	Models []string `yaml:"models"`
	// MaxBlocksPerPod bounds the engine blocks tracked per pod (index
	// holder); past it the pod's least recently used block is evicted.
	MaxBlocksPerPod int `yaml:"max_blocks_per_pod"`
	// MaxIndexBlocksPerPod bounds the blocks one pod (index holder) may
	// index when its pods[] entry sets neither max_index_blocks nor
	// kv_blocks, and for pods discovered from their events: past it the
	// pod's least recently used block is evicted, so one event stream
	// cannot fill the index for the others.
	MaxIndexBlocksPerPod int `yaml:"max_index_blocks_per_pod"`
	// DeadAfter is how long a pod may stay silent (no events, no good
	// health check) before it is removed from the index.
	DeadAfter time.Duration `yaml:"dead_after"`
	// AcceptUnknownPods lets publishers register pods: events naming a pod
	// that is neither a configured pod's id nor its address create a
	// discovered pod (indexed, never routed to, since it has no address).
	// Default false: such events are dropped (unknown_pod, and refused
	// before any state at the gRPC Publish and ZMQ transports), so no
	// publisher can make the cell create phantom pods.
	AcceptUnknownPods bool `yaml:"accept_unknown_pods"`
}

// PodConfig is one configured pod.
type PodConfig struct {
	// ID is the pod id, as its events name it (kv@<id>@<model>).
	ID string `yaml:"id"`
	// Address is the pod's HTTP address (host:port) for requests and
	// health checks.
	Address string `yaml:"address"`
	// Role is prefill, decode or both (default both).
	Role string `yaml:"role"`
	// ZMQEndpoint is the pod's KV event PUB socket to dial, e.g.
	// tcp://10.0.0.5:5557; empty when the pod connects to zmq.bind or
	// publishes elsewhere.
	ZMQEndpoint string `yaml:"zmq_endpoint"`
	// ReplayEndpoint is the pod's replay ROUTER socket, used to repair
	// gaps; empty disables repair (a gap then clears the pod).
	ReplayEndpoint string `yaml:"replay_endpoint"`
	// KVBlocks is the pod's KV cache size in router blocks, for the busy
	// threshold and the pod's share of the index (max_index_blocks); 0
	// means unknown (the pod is never "busy").
	KVBlocks int `yaml:"kv_blocks"`
	// MaxIndexBlocks bounds the blocks the pod (each of its ranks) may
	// index; past it the pod's least recently used block is evicted. 0
	// means kvBoundFactor times kv_blocks when that is set, else
	// events.max_index_blocks_per_pod.
	MaxIndexBlocks int `yaml:"max_index_blocks"`
	// Model is the model the pod serves, as clients name it in requests
	// (vLLM's --served-model-name). It wins over the model a topic names,
	// and with zmq_endpoint and replay_endpoint it lets the cell catch up
	// from the replay socket before it reports ready. "" means the model
	// the events name (kv@<pod>@<model>), else events.default_model.
	Model string `yaml:"model"`
	// DataParallelSize is the engine's data-parallel size: vLLM publishes
	// rank r's events on the ports of zmq_endpoint and replay_endpoint plus
	// r, and the cell dials each. 0 or 1 means one engine.
	DataParallelSize int `yaml:"data_parallel_size"`
	// Events says whether the pod publishes KV events: exact (the index
	// follows its events) or none (the cell learns its blocks from its own
	// routing: the approximate index, see approximate). "" means
	// approximate.default_pod_events.
	Events string `yaml:"events"`
}

// ZMQConfig configures the ZMQ transport.
type ZMQConfig struct {
	// Bind, when set, is an address the cell binds a SUB socket to, for
	// engines that connect to the subscriber (tcp://0.0.0.0:5557).
	Bind string `yaml:"bind"`
	// TopicPrefix is the prefix of topics that name their engine,
	// <topic_prefix><pod>[@<model>]: how engines connecting to bind are
	// told apart (they share one socket). "" accepts topics that are just
	// <pod>[@<model>]. A dialed pod (zmq_endpoint) needs no such topic: any
	// topic works, vLLM's default empty one included. Messages whose pod
	// cannot be told are counted (cellrouter_transport_dropped_total
	// {reason="topic"}) and logged.
	TopicPrefix string `yaml:"topic_prefix"`
	// QueueDepth bounds the messages waiting per engine connected to bind;
	// each engine is applied on its own, so that one whose replay hangs
	// holds up nobody else. Overflow is dropped, counted (queue_full) and
	// repaired by replay.
	QueueDepth int `yaml:"queue_depth"`
	// ReplayTimeout bounds one gap repair through a replay socket.
	ReplayTimeout time.Duration `yaml:"replay_timeout"`
	// AllowedSources, when set, limits bind to engines connecting from
	// these networks (CIDRs such as 10.0.0.0/16, or single addresses): a
	// connection from any other source address is closed as it is
	// accepted and counted (cellrouter_transport_zmq_connections_total
	// {kind="refused"}). Empty accepts every source that can reach the
	// socket: ZMQ has no authentication, so bind must stay on the pod
	// network either way.
	AllowedSources []string `yaml:"allowed_sources"`
}

// NATSConfig configures the NATS JetStream transport.
type NATSConfig struct {
	// URL of the NATS server; empty disables the transport.
	URL string `yaml:"url"`
	// Stream is the JetStream stream holding the events.
	Stream string `yaml:"stream"`
	// SubjectPrefix is the subject prefix events are published under
	// (<prefix>.<pod>).
	SubjectPrefix string `yaml:"subject_prefix"`
	// Durable is the durable consumer name. Every replica of every cell
	// needs its own (two sharing one split the events, each indexing half);
	// empty, the default, derives "celld-<cell_id>-<replica.id>".
	Durable string `yaml:"durable"`
	// CreateStream creates (or updates) the stream when it is missing;
	// false requires it to exist.
	CreateStream bool `yaml:"create_stream"`
	// Replay rebuilds the index from what the stream retains when celld
	// starts (the index lives in memory); false resumes after the last ack.
	Replay bool `yaml:"replay"`
	// StreamMaxAge bounds how long the stream keeps events (when the cell
	// creates it): the history a restarted cell can rebuild from.
	StreamMaxAge time.Duration `yaml:"stream_max_age"`
	// AckWait is how long the server waits for an ack before redelivering.
	AckWait time.Duration `yaml:"ack_wait"`
	// MaxAckPending is how many messages may be unacknowledged; 1 keeps
	// strict per-pod order (see natsjs).
	MaxAckPending int `yaml:"max_ack_pending"`
}

// DefaultConfig returns the configuration celld starts from before the
// config file and flags are applied.
func DefaultConfig() Config {
	ic := index.DefaultConfig()
	ec := events.DefaultConfig()
	return Config{
		CellID:   "cell-0",
		HTTPAddr: "127.0.0.1:8080",
		GRPCAddr: "127.0.0.1:9090",
		Index:    IndexConfig{MaxBlocks: ic.MaxBlocks, SweepWorkers: ic.SweepWorkers, Layout: string(index.LayoutPaged)},
		Events: EventsConfig{BlockSize: ec.BlockSize, MaxBlocksPerPod: ec.MaxBlocksPerPod,
			MaxIndexBlocksPerPod: ec.MaxIndexBlocksPerPod, DeadAfter: ec.DeadAfter},
		ZMQ:             ZMQConfig{TopicPrefix: "kv@", QueueDepth: 4096, ReplayTimeout: 5 * time.Second},
		NATS:            defaultNATS(),
		Approximate:     defaultApproximate(),
		Discovery:       defaultDiscovery(),
		Speculative:     defaultSpeculative(),
		EngineMetrics:   enginemetrics.DefaultConfig(),
		FlowControl:     flowcontrol.DefaultConfig(),
		Snapshot:        defaultSnapshot(),
		Routing:         DefaultRoutingConfig(),
		Gossip:          DefaultGossipConfig(),
		Replica:         DefaultReplicaConfig(),
		Limits:          defaultLimits(),
		AccessLog:       logging.DefaultAccessConfig(),
		Decisions:       decisions.DefaultConfig(),
		Status:          statuspage.DefaultConfig(),
		TickInterval:    time.Second,
		HealthInterval:  5 * time.Second,
		HealthTimeout:   2 * time.Second,
		ShutdownTimeout: 5 * time.Second,
	}
}

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("cell: invalid config")

// ParseConfig reads YAML over the defaults. Unknown fields are errors, so a
// misspelt key does not silently fall back to a default.
func ParseConfig(data []byte) (Config, error) {
	cfg := DefaultConfig()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return cfg, cfg.Validate()
}

// LoadConfig reads and validates the YAML file at path.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("cell: read config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// Validate reports the first invalid field with its value.
func (c Config) Validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrConfig, field, v, why)
	}
	if c.CellID == "" {
		return bad("cell_id", `""`, "must not be empty")
	}
	if err := c.AccessLog.Validate(); err != nil {
		return bad("access_log.sample", c.AccessLog.Sample, "want 0 to 1")
	}
	if err := c.Decisions.Validate("decisions"); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Status.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	for _, a := range []struct{ field, v string }{{"http_addr", c.HTTPAddr}, {"grpc_addr", c.GRPCAddr}} {
		if _, _, err := net.SplitHostPort(a.v); err != nil {
			return bad(a.field, fmt.Sprintf("%q", a.v), "want host:port")
		}
	}
	if _, _, err := net.SplitHostPort(c.EPPAddr); c.EPPAddr != "" && err != nil {
		return bad("epp_addr", fmt.Sprintf("%q", c.EPPAddr), "want host:port, or empty for no picker")
	}
	if err := c.validateReplica(); err != nil {
		return err
	}
	if c.Index.ExpectedBlocks < -1 {
		return bad("index.expected_blocks", c.Index.ExpectedBlocks, "must be -1 (none), 0 (the pods' kv_blocks) or positive")
	}
	if err := c.indexConfig().Validate(); err != nil {
		return fmt.Errorf("%w: index: %v", ErrConfig, err)
	}
	if err := c.eventsConfig().Validate(); err != nil {
		return fmt.Errorf("%w: events: %v", ErrConfig, err)
	}
	for i, p := range c.Pods {
		if p.Address != "" {
			if _, _, err := net.SplitHostPort(p.Address); err != nil {
				return bad(fmt.Sprintf("pods[%d].address", i), fmt.Sprintf("%q", p.Address), "want host:port")
			}
		}
		if p.KVBlocks < 0 {
			return bad(fmt.Sprintf("pods[%d].kv_blocks", i), p.KVBlocks, "must not be negative")
		}
		if p.MaxIndexBlocks < 0 || p.MaxIndexBlocks > 1<<30 {
			return bad(fmt.Sprintf("pods[%d].max_index_blocks", i), p.MaxIndexBlocks, "want 0 (from kv_blocks) .. 1073741824")
		}
		if p.ReplayEndpoint != "" && p.ZMQEndpoint == "" && c.ZMQ.Bind == "" {
			return bad(fmt.Sprintf("pods[%d].replay_endpoint", i), p.ReplayEndpoint, "needs zmq_endpoint or zmq.bind")
		}
		if p.DataParallelSize < 0 || p.DataParallelSize > 1024 {
			return bad(fmt.Sprintf("pods[%d].data_parallel_size", i), p.DataParallelSize, "want 0..1024")
		}
		if p.DataParallelSize > 1 && !hasPort(p.ZMQEndpoint) {
			return bad(fmt.Sprintf("pods[%d].data_parallel_size", i), p.DataParallelSize,
				"needs a zmq_endpoint with a port (rank r publishes on its port plus r)")
		}
	}
	if err := c.validateDiscovery(); err != nil {
		return err
	}
	if err := c.validateLearning(); err != nil {
		return err
	}
	if err := c.FlowControl.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.EngineMetrics.Validate("engine_metrics"); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Routing.validate(); err != nil {
		return err
	}
	if err := c.Snapshot.validate(); err != nil {
		return err
	}
	if err := c.validateGossip(); err != nil {
		return err
	}
	if err := c.validateSecurity(); err != nil {
		return err
	}
	if c.ZMQ.ReplayTimeout <= 0 {
		return bad("zmq.replay_timeout", c.ZMQ.ReplayTimeout, "must be positive")
	}
	if c.ZMQ.QueueDepth < 1 {
		return bad("zmq.queue_depth", c.ZMQ.QueueDepth, "must be at least 1")
	}
	if _, err := parseSources(c.ZMQ.AllowedSources); err != nil {
		return fmt.Errorf("%w: zmq.allowed_sources: %v", ErrConfig, err)
	}
	if len(c.ZMQ.AllowedSources) > 0 && !strings.HasPrefix(c.ZMQ.Bind, "tcp://") {
		return bad("zmq.bind", fmt.Sprintf("%q", c.ZMQ.Bind), "zmq.allowed_sources needs a tcp:// bind address")
	}
	if c.NATS.URL != "" {
		if err := c.natsConfig().Validate(); err != nil {
			return fmt.Errorf("%w: nats: %v (nats.durable must be unique per replica of each cell; leave it empty to derive celld-<cell_id>-<replica.id>)", ErrConfig, err)
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
		zero  bool
	}{
		{"tick_interval", c.TickInterval, false},
		{"health_interval", c.HealthInterval, true},
		{"health_timeout", c.HealthTimeout, false},
		{"shutdown_timeout", c.ShutdownTimeout, false},
	} {
		if d.v < 0 || (d.v == 0 && !d.zero) {
			return bad(d.field, d.v, "must be positive")
		}
	}
	return nil
}

func (c Config) indexConfig() index.Config {
	ic := index.Config{MaxBlocks: c.Index.MaxBlocks, SweepWorkers: c.Index.SweepWorkers, ExpectedBlocks: c.Index.ExpectedBlocks,
		Layout: index.Layout(c.Index.Layout)}
	switch {
	case ic.ExpectedBlocks == -1:
		ic.ExpectedBlocks = 0
	case ic.ExpectedBlocks == 0:
		for _, p := range c.Pods {
			ic.ExpectedBlocks += p.KVBlocks
		}
		ic.ExpectedBlocks = min(ic.ExpectedBlocks, ic.MaxBlocks)
	}
	return ic
}

func (c Config) eventsConfig() events.Config {
	ec := events.Config{
		BlockSize:            c.Events.BlockSize,
		DefaultModel:         c.Events.DefaultModel,
		Models:               c.Events.Models,
		MaxBlocksPerPod:      c.Events.MaxBlocksPerPod,
		MaxIndexBlocksPerPod: c.Events.MaxIndexBlocksPerPod,
		DeadAfter:            c.Events.DeadAfter,
		RefuseUnknownPods:    !c.Events.AcceptUnknownPods,
	}
	for _, p := range c.Pods {
		ec.Pods = append(ec.Pods, events.PodSpec{ID: p.ID, Address: p.Address, Role: events.Role(p.Role), Model: p.Model,
			MaxIndexBlocks: p.indexBound()})
	}
	return ec
}

// kvBoundFactor is how many times its KV cache size (kv_blocks) a pod may
// index by default: room for a CPU tier as large as the GPU's (vLLM's
// offloading) and for stores that arrive before the removals that made
// room for them.
const kvBoundFactor = 2

// indexBound returns the pod's bound of indexed blocks: max_index_blocks,
// else kvBoundFactor times kv_blocks, else 0 (events.max_index_blocks_per_pod).
func (p PodConfig) indexBound() int {
	if p.MaxIndexBlocks > 0 {
		return p.MaxIndexBlocks
	}
	return min(kvBoundFactor*p.KVBlocks, 1<<30)
}

func defaultNATS() NATSConfig {
	d := natsjs.DefaultConfig()
	return NATSConfig{
		Stream:        d.Stream,
		SubjectPrefix: d.SubjectPrefix,
		Durable:       "",
		CreateStream:  d.CreateStream,
		Replay:        d.Replay,
		StreamMaxAge:  d.StreamMaxAge,
		AckWait:       d.AckWait,
		MaxAckPending: d.MaxAckPending,
	}
}

func (c Config) natsConfig() natsjs.Config {
	n := natsjs.DefaultConfig()
	n.URL = c.NATS.URL
	n.Name = "celld-" + c.CellID
	n.Stream = c.NATS.Stream
	n.SubjectPrefix = c.NATS.SubjectPrefix
	n.Durable = c.durableName()
	n.CreateStream = c.NATS.CreateStream
	n.Replay = c.NATS.Replay
	n.StreamMaxAge = c.NATS.StreamMaxAge
	n.AckWait = c.NATS.AckWait
	n.MaxAckPending = c.NATS.MaxAckPending
	return n
}

// hasPort reports whether a ZMQ address ends in a numeric port.
func hasPort(ep string) bool {
	i := strings.LastIndexByte(ep, ':')
	if i < 0 || i == len(ep)-1 {
		return false
	}
	_, err := strconv.Atoi(ep[i+1:])
	return err == nil
}
