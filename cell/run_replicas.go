package cell

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/cellrouter/cellrouter/cell/replica"
	"github.com/cellrouter/cellrouter/gossip"
)

// ReplicaConfig says which replica of its cell this celld is. Several
// celld with the same cell_id are replicas: each consumes every event and
// holds the whole index, they share their active-request load and their
// drains over the gossip pool (package cell/replica), and the global tier
// sees one cell with one endpoint per replica.
type ReplicaConfig struct {
	// ID names the replica within its cell: its gossip node is
	// "cell/<cell_id>/<id>", the origin of the load it shares, and part of
	// its JetStream durable consumer's default name. Default: $NODE_NAME
	// or $POD_NAME when set (Kubernetes), else the host name. At most 48
	// bytes, no '/'.
	ID string `yaml:"id"`
	// LoadTTL bounds how long a request of a peer replica that never
	// resyncs (a version before resyncs) counts in this replica's load
	// without news of it (a lost "done"). Default 5m.
	LoadTTL time.Duration `yaml:"load_ttl"`
	// LoadFlushInterval is how often this replica sends its load changes
	// to its peers. Default 20ms.
	LoadFlushInterval time.Duration `yaml:"load_flush_interval"`
	// LoadResyncInterval is how often this replica sends every request it
	// has in flight again, which repairs the changes its peers lost.
	// Default 1s.
	LoadResyncInterval time.Duration `yaml:"load_resync_interval"`
	// LoadLease bounds how long a request of a peer that resyncs counts
	// without news of it; more than twice load_resync_interval. Default 5s.
	LoadLease time.Duration `yaml:"load_lease"`
}

// maxReplicaIDLen keeps "cell/<cell id>/<replica id>" within gossip's
// node-name limit.
const maxReplicaIDLen = 48

// DefaultReplicaConfig returns the replica settings: the id from the
// environment (see ReplicaConfig.ID), the sharing defaults.
func DefaultReplicaConfig() ReplicaConfig {
	d := replica.DefaultConfig()
	return ReplicaConfig{ID: defaultReplicaID(), LoadTTL: d.TTL, LoadFlushInterval: d.FlushInterval,
		LoadResyncInterval: d.ResyncInterval, LoadLease: d.Lease}
}

func defaultReplicaID() string {
	for _, k := range []string{"NODE_NAME", "POD_NAME"} {
		if v := os.Getenv(k); v != "" {
			return sanitizeReplicaID(v)
		}
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "r0"
	}
	return sanitizeReplicaID(h)
}

// sanitizeReplicaID makes a host or pod name a valid replica id.
func sanitizeReplicaID(s string) string {
	s = strings.ReplaceAll(s, "/", "-")
	if len(s) > maxReplicaIDLen {
		s = s[:maxReplicaIDLen]
	}
	return s
}

func (c Config) validateReplica() error {
	r := c.Replica
	switch {
	case r.ID == "" || len(r.ID) > maxReplicaIDLen || strings.ContainsAny(r.ID, "/ \t\n"):
		return fmt.Errorf("%w: replica.id = %q: want 1..%d bytes without '/' or spaces", ErrConfig, r.ID, maxReplicaIDLen)
	case r.LoadTTL <= 0:
		return fmt.Errorf("%w: replica.load_ttl = %v: must be positive", ErrConfig, r.LoadTTL)
	case r.LoadFlushInterval <= 0:
		return fmt.Errorf("%w: replica.load_flush_interval = %v: must be positive", ErrConfig, r.LoadFlushInterval)
	case r.LoadResyncInterval <= 0:
		return fmt.Errorf("%w: replica.load_resync_interval = %v: must be positive", ErrConfig, r.LoadResyncInterval)
	case r.LoadLease <= 2*r.LoadResyncInterval:
		return fmt.Errorf("%w: replica.load_lease = %v: must exceed twice replica.load_resync_interval (%v), or one lost resync would free a live request", ErrConfig, r.LoadLease, r.LoadResyncInterval)
	}
	return nil
}

// nodeName is the replica's gossip node name.
func (c Config) nodeName() string { return "cell/" + c.CellID + "/" + c.Replica.ID }

// durableName is the JetStream durable consumer: nats.durable when set,
// else one per replica, "celld-<cell_id>-<replica.id>" with the characters
// JetStream refuses replaced. Two replicas sharing one durable would split
// the events between them, each holding half an index.
func (c Config) durableName() string {
	if c.NATS.Durable != "" {
		return c.NATS.Durable
	}
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', '/', '\\', ' ', '\t', '\n':
			return '_'
		}
		return r
	}, "celld-"+c.CellID+"-"+c.Replica.ID)
}

func (c Config) sharerConfig() replica.Config {
	d := replica.DefaultConfig()
	d.TTL, d.FlushInterval = c.Replica.LoadTTL, c.Replica.LoadFlushInterval
	d.ResyncInterval, d.Lease = c.Replica.LoadResyncInterval, c.Replica.LoadLease
	return d
}

// onPeerDrain applies a drain a peer replica received: the same change as
// a local DrainPod, not sent on again.
func (c *Cell) onPeerDrain(from string, d gossip.Drain) {
	if d.Pod == "" || (d.Cell != "" && d.Cell != c.cfg.CellID) {
		return
	}
	if c.state.setDraining(d.Pod, !d.Cancel) {
		c.log.Info("pod drain from a peer replica", "pod", d.Pod, "drain", !d.Cancel, "peer", from)
	}
}

// shareDrain sends a local drain to the peer replicas (reliably; a peer
// that misses it is logged).
func (c *Cell) shareDrain(ctx context.Context, pod string, cancel bool) {
	if c.sharer == nil {
		return
	}
	n, err := c.sharer.Drain(gossip.Drain{Cell: c.cfg.CellID, Pod: pod, Cancel: cancel})
	if err != nil {
		c.log.Warn("drain not shared with every peer replica", "pod", pod, "reached", n, "err", err)
	}
}

// runSharer shares the load over node until ctx ends.
func (c *Cell) runSharer(ctx context.Context, node *gossip.Node) func() {
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); c.sharer.Run(sctx, node) }()
	return func() { cancel(); <-done }
}

// ReplicaPeers returns the names of the live peer replicas of this cell
// (none before the cell joined its pool, or without one).
func (c *Cell) ReplicaPeers() []string {
	n := c.node.Load()
	if n == nil {
		return nil
	}
	var out []string
	for _, m := range n.Peers() {
		out = append(out, m.Name)
	}
	return out
}

// registerReplicaMetrics exports the load sharing's counters.
func (c *Cell) registerReplicaMetrics(reg prometheus.Registerer) {
	labels := prometheus.Labels{"cell": c.cfg.CellID}
	for _, m := range []struct {
		name, help string
		get        func(replica.Stats) uint64
	}{
		{"cellrouter_replica_load_changes_sent_total", "Load changes (route, first token, done) sent to the peer replicas.", func(s replica.Stats) uint64 { return s.Sent }},
		{"cellrouter_replica_load_changes_received_total", "Load changes received from peer replicas.", func(s replica.Stats) uint64 { return s.Received }},
		{"cellrouter_replica_load_changes_dropped_total", "Load changes dropped because the send queue was full.", func(s replica.Stats) uint64 { return s.Dropped }},
		{"cellrouter_replica_messages_malformed_total", "Peer messages that did not decode.", func(s replica.Stats) uint64 { return s.Malformed }},
		{"cellrouter_replica_load_changes_resent_total", "In-flight requests sent again to the peer replicas by resyncs.", func(s replica.Stats) uint64 { return s.Resent }},
		{"cellrouter_replica_requests_repaired_total", "Peer requests a resync started or marked prefilled because their start or first token was lost.", func(s replica.Stats) uint64 { return s.Repaired }},
		{"cellrouter_replica_requests_expired_total", "Peer requests freed by replica.load_lease or replica.load_ttl (their done never came).", func(s replica.Stats) uint64 { return s.Expired }},
		{"cellrouter_replica_requests_orphaned_total", "Peer requests freed because their replica died, left or restarted.", func(s replica.Stats) uint64 { return s.Orphaned }},
		{"cellrouter_replica_drains_received_total", "Pod drains received from peer replicas.", func(s replica.Stats) uint64 { return s.Drains }},
	} {
		get := m.get
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: m.name, Help: m.help, ConstLabels: labels},
			func() float64 { return float64(get(c.sharer.Stats())) }))
	}
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "cellrouter_replica_peer_requests", ConstLabels: labels,
		Help: "Peer replicas' in-flight requests counted in this replica's load."},
		func() float64 { return float64(c.router.tracker.RemoteTickets()) }))
}
