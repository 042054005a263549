package zmqsub

import (
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// Endpoint is one publisher the Subscriber dials: an engine's PUB socket
// and, optionally, its replay socket.
type Endpoint struct {
	// Pub is the engine's PUB socket address, for example "tcp://10.0.0.7:5557".
	Pub string
	// Replay is the engine's ROUTER replay socket ("tcp://10.0.0.7:5558");
	// "" means the engine has none, and a gap can only be given up.
	Replay string
	// Pod, when set, is the pod every message of this socket belongs to,
	// whatever its topic says: the cell dialed the engine, so it knows who
	// it is (vLLM's default topic is empty; others name the engine by an
	// address the cell does not use). When empty, each message's topic must
	// name its pod (<TopicPrefix><pod>[@<model>]) or it is dropped.
	Pod string
	// Model, when set, is the model of every batch of this socket; when
	// empty, the model a topic <TopicPrefix><pod>@<model> names, else none
	// (the sink's default). With Pod and Replay set the Subscriber catches
	// up from the replay socket as soon as it connects, before Ready, under
	// Model; if the live topic then names another model, the buffer is
	// replayed again under that one (replayed batches carry no topic, and
	// filed under another model they would never match).
	Model string
	// Rank, when HasRank, is the data-parallel rank this socket publishes
	// for (vLLM binds rank r's sockets on the base ports plus r): batches
	// that do not say their rank get it, so each rank is its own holder.
	Rank    int
	HasRank bool
}

// Config configures a Subscriber. At least one of Endpoints and Bind is set.
type Config struct {
	// Endpoints are the publishers to dial, one SUB socket (and goroutine)
	// each. A lost connection is redialed with backoff.
	Endpoints []Endpoint
	// Bind, when not empty, is an address the Subscriber binds one SUB socket
	// to, for engines that connect to the cell ("tcp://*:5557", or
	// "tcp://127.0.0.1:0" for any free port; see Subscriber.BindEndpoint).
	Bind string
	// ReplayEndpoints maps a pod id (the pod part of the topic) to its
	// replay socket, for publishers that connect to Bind.
	ReplayEndpoints map[string]string
	// ReplayTemplate builds the replay socket of a Bind publisher not in
	// ReplayEndpoints: "{pod}" is replaced by the pod id and "{host}" by its
	// host part (the pod id up to its last ':'), for example
	// "tcp://{host}:5558". "" means no replay for unlisted pods.
	ReplayTemplate string
	// ResolveReplay, when not nil, is asked first for a Bind publisher's
	// replay socket (for pods learned from discovery); "" means not known,
	// and ReplayEndpoints and ReplayTemplate are tried next. It is called
	// from the socket's goroutine and must be safe for concurrent use.
	ResolveReplay func(pod string) string
	// TopicPrefix is the prefix of topics that name their publisher,
	// <TopicPrefix><pod>[@<model>] (see vllmwire.SplitTopic): on the Bind
	// socket, where engines share one socket, it is how a message's pod is
	// known; on an Endpoint with Pod only a model is read from such a
	// topic. Default "kv@"; "" accepts topics that are just <pod>[@<model>].
	// Sockets subscribe to every topic and drop (count and log) the
	// messages whose pod cannot be told, so nothing is lost unseen.
	TopicPrefix string
	// QueueDepth bounds the messages waiting per publisher of the Bind
	// socket: each publisher is applied by its own goroutine, so that one
	// engine whose replay hangs holds up nobody else. A message that finds
	// its publisher's queue full is dropped and counted (queue_full); the
	// gap it leaves is repaired by replay. Default 4096.
	QueueDepth int
	// Limits bound what one message may make the decoder allocate.
	Limits vllmwire.Limits
	// ReplayTimeout is how long a replay may go without a frame (including
	// the connection and the first frame) before it is abandoned and the
	// gap given up. Default 5s.
	ReplayTimeout time.Duration
	// ReplayMaxBatches bounds the batches one replay may deliver, against a
	// publisher that never ends its stream. Default 100000 (ten times
	// vLLM's buffer).
	ReplayMaxBatches int
	// ReconnectMin and ReconnectMax bound the pause between two attempts to
	// dial a publisher; it doubles after each failure. Defaults 100ms and 5s.
	ReconnectMin, ReconnectMax time.Duration
	// LogEvery is the shortest interval between two log lines of one kind
	// (a decode error reason, a replay failure); the rest are counted only.
	// Default 1s.
	LogEvery time.Duration
	// Logger receives the Subscriber's log lines; nil means slog.Default().
	Logger *slog.Logger
	// AllowedSources, when not empty, limits the Bind socket to publishers
	// whose connection comes from one of these networks: a connection
	// from any other source address is closed as it is accepted, before
	// the ZMTP handshake, and counted (Counters.RefusedConnections). ZMQ
	// has no authentication of its own, and zmq4 does not say which
	// connection a message came from, so the source address is checked
	// per connection (acl.go). Empty accepts every source. Dial sockets
	// are not affected: the cell chose whom to dial.
	AllowedSources []netip.Prefix
	// KnownPod, when not nil, says whether a pod a topic names may publish:
	// a message of the Bind socket, or of a dial socket without Pod, whose
	// topic names a pod it refuses is dropped before the Subscriber keeps
	// any state for it (counted as "unknown_pod", logged at a bounded rate).
	// The cell passes the applier's Admits: configured pods only, unless
	// events.accept_unknown_pods. It must be safe for concurrent use.
	KnownPod func(pod string) bool
}

// DefaultConfig returns a Config with every default and no endpoint; set
// Endpoints or Bind.
func DefaultConfig() Config {
	return Config{
		TopicPrefix:      vllmwire.DefaultTopicPrefix,
		QueueDepth:       4096,
		Limits:           vllmwire.DefaultLimits(),
		ReplayTimeout:    5 * time.Second,
		ReplayMaxBatches: 100000,
		ReconnectMin:     100 * time.Millisecond,
		ReconnectMax:     5 * time.Second,
		LogEvery:         time.Second,
	}
}

// Validate returns an error naming the first invalid field and its value.
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 && c.Bind == "" {
		return fmt.Errorf("zmqsub: Config.Endpoints and Config.Bind are both empty: nothing to subscribe to")
	}
	for i, e := range c.Endpoints {
		if !isAddr(e.Pub) {
			return fmt.Errorf("zmqsub: Config.Endpoints[%d].Pub %q is not a ZMQ address (tcp://host:port)", i, e.Pub)
		}
		if e.Replay != "" && !isAddr(e.Replay) {
			return fmt.Errorf("zmqsub: Config.Endpoints[%d].Replay %q is not a ZMQ address (tcp://host:port)", i, e.Replay)
		}
	}
	if c.Bind != "" && !isAddr(c.Bind) {
		return fmt.Errorf("zmqsub: Config.Bind %q is not a ZMQ address (tcp://host:port)", c.Bind)
	}
	for pod, ep := range c.ReplayEndpoints {
		if !isAddr(ep) {
			return fmt.Errorf("zmqsub: Config.ReplayEndpoints[%q] %q is not a ZMQ address (tcp://host:port)", pod, ep)
		}
	}
	if c.ReplayTemplate != "" && !isAddr(c.ReplayTemplate) {
		return fmt.Errorf("zmqsub: Config.ReplayTemplate %q is not a ZMQ address template (tcp://{host}:port)", c.ReplayTemplate)
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("zmqsub: Config.Limits: %w", err)
	}
	if c.ReplayTimeout <= 0 {
		return fmt.Errorf("zmqsub: Config.ReplayTimeout %v must be positive", c.ReplayTimeout)
	}
	if c.ReplayMaxBatches < 1 {
		return fmt.Errorf("zmqsub: Config.ReplayMaxBatches %d must be at least 1", c.ReplayMaxBatches)
	}
	if c.ReconnectMin <= 0 || c.ReconnectMax < c.ReconnectMin {
		return fmt.Errorf("zmqsub: Config.ReconnectMin %v and ReconnectMax %v: want 0 < min <= max", c.ReconnectMin, c.ReconnectMax)
	}
	if c.QueueDepth < 1 {
		return fmt.Errorf("zmqsub: Config.QueueDepth %d must be at least 1", c.QueueDepth)
	}
	if c.LogEvery <= 0 {
		return fmt.Errorf("zmqsub: Config.LogEvery %v must be positive", c.LogEvery)
	}
	for i, p := range c.AllowedSources {
		if !p.IsValid() {
			return fmt.Errorf("zmqsub: Config.AllowedSources[%d] %v is not a valid network", i, p)
		}
	}
	if len(c.AllowedSources) > 0 && c.Bind != "" && !strings.HasPrefix(c.Bind, "tcp://") {
		return fmt.Errorf("zmqsub: Config.Bind %q: AllowedSources needs a tcp:// bind address", c.Bind)
	}
	return nil
}

// isAddr reports whether s looks like a ZMQ address (transport://rest).
func isAddr(s string) bool {
	i := strings.Index(s, "://")
	return i > 0 && i+3 < len(s)
}

// replayFor returns the replay socket of a data-parallel rank of a pod
// that published to the Bind socket (rank -1 when the engine did not say),
// or "" when none is known. A rank above 0 adds the rank to the port, as
// vLLM offsets each rank's sockets.
func (c *Config) replayFor(pod string, rank int) string {
	ep := c.replayBase(pod)
	if ep == "" || rank <= 0 {
		return ep
	}
	return OffsetPort(ep, rank)
}

// replayBase returns the replay socket configured or resolved for pod.
func (c *Config) replayBase(pod string) string {
	if c.ResolveReplay != nil {
		if ep := c.ResolveReplay(pod); ep != "" {
			return ep
		}
	}
	if ep, ok := c.ReplayEndpoints[pod]; ok {
		return ep
	}
	if c.ReplayTemplate == "" {
		return ""
	}
	host := pod
	if i := strings.LastIndexByte(pod, ':'); i >= 0 {
		host = pod[:i]
	}
	return strings.NewReplacer("{pod}", pod, "{host}", host).Replace(c.ReplayTemplate)
}

// OffsetPort returns the ZMQ address ep with n added to its port, as vLLM
// places data-parallel rank n's sockets ("tcp://h:5557" and 2 give
// "tcp://h:5559"). An address without a numeric port is returned unchanged.
func OffsetPort(ep string, n int) string {
	i := strings.LastIndexByte(ep, ':')
	if i < 0 || n == 0 {
		return ep
	}
	port, err := strconv.Atoi(ep[i+1:])
	if err != nil {
		return ep
	}
	return ep[:i+1] + strconv.Itoa(port+n)
}
