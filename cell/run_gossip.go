package cell

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/reload"
)

// GossipConfig configures how the cell joins the gossip pool and
// publishes its summary to the global tier. cell/testdata/celld.example.yaml
// documents each field with its default.
type GossipConfig struct {
	// Bind is the memberlist address, host:port (an empty host binds every
	// interface; port 0 picks one). Empty keeps the cell out of any pool (a
	// standalone cell), the default. globald binds 127.0.0.1:7946 by
	// default, so a cell on the same host needs another port; the example
	// configuration uses 7947.
	Bind string `yaml:"bind"`
	// Advertise is the address (IP:port) other nodes reach this one at,
	// when Bind is a wildcard or behind NAT. Empty: the bind address.
	Advertise string `yaml:"advertise"`
	// GatewayAddress is where the gateway that runs this cell as its
	// endpoint picker takes requests (host:port: an InferencePool's
	// Gateway, or the standalone Envoy of deploy/envoy), advertised to the
	// pool beside the cell's own addresses. globald's endpoint picker
	// answers with it, so a global gateway sends the request to this
	// gateway, whose picker is this cell. Empty (the default): the cell has
	// no gateway and globald's picker passes it over.
	GatewayAddress string `yaml:"gateway_address"`
	// Seeds are pool members to join (host:port), such as globald's gossip
	// address; the cell retries until one answers. None: the cell waits to
	// be joined.
	Seeds []string `yaml:"seeds"`
	// SecretKey is the pool's encryption key, base64 of 16, 24 or 32 bytes;
	// empty means an unencrypted pool.
	SecretKey string `yaml:"secret_key"`
	// KeyringFile, instead of SecretKey, holds the pool's keys, one base64
	// key a line, the first the one the cell encrypts with; it is read
	// again every auth.reload_interval, so keys rotate without a restart
	// (gossip.ParseKeyring gives the three steps).
	KeyringFile string `yaml:"keyring_file"`
	// SummaryInterval is how often the cell rebuilds and publishes its
	// summary (one generation). Default 2s.
	SummaryInterval time.Duration `yaml:"summary_interval"`
	// Stride samples every Stride-th depth of each chain into the summary.
	// Default 4.
	Stride int `yaml:"stride"`
	// FalsePositiveRate is the summary's target false-positive rate.
	// Default 0.01.
	FalsePositiveRate float64 `yaml:"false_positive_rate"`
	// ProbeInterval and ProbeTimeout tune failure detection (defaults 1s
	// and 500ms; the timeout must be below the interval).
	ProbeInterval time.Duration `yaml:"probe_interval"`
	ProbeTimeout  time.Duration `yaml:"probe_timeout"`
	// SuspicionMult scales how long a suspect member has to refute before
	// it is declared dead (default 4; see gossip.Config.SuspicionMult).
	SuspicionMult int `yaml:"suspicion_mult"`
	// RejoinInterval is how often the cell joins its seeds and the members
	// it knew (a restarted globald, a sibling replica) again while they are
	// not in the pool (default 5s); RejoinMaxInterval caps the backoff
	// while they do not answer (default 1m). See gossip.Config.
	RejoinInterval    time.Duration `yaml:"rejoin_interval"`
	RejoinMaxInterval time.Duration `yaml:"rejoin_max_interval"`
	// RememberMembers bounds how many departed members' last addresses are
	// rejoined (default 64; negative: none), each for RememberFor (default
	// 30m).
	RememberMembers int           `yaml:"remember_members"`
	RememberFor     time.Duration `yaml:"remember_for"`
}

// DefaultGossipConfig returns a standalone cell's settings with the
// publication defaults used when Bind is set.
func DefaultGossipConfig() GossipConfig {
	d := gossip.DefaultConfig()
	s := gossip.DefaultSummaryConfig()
	return GossipConfig{SummaryInterval: 2 * time.Second, Stride: s.Stride, FalsePositiveRate: s.FalsePositiveRate,
		ProbeInterval: d.ProbeInterval, ProbeTimeout: d.ProbeTimeout, SuspicionMult: d.SuspicionMult,
		RejoinInterval: d.RejoinInterval, RejoinMaxInterval: d.RejoinMaxInterval, RememberMembers: d.RememberMembers, RememberFor: d.RememberFor}
}

func (c Config) summaryConfig() gossip.SummaryConfig {
	s := gossip.DefaultSummaryConfig()
	s.Stride, s.FalsePositiveRate = c.Gossip.Stride, c.Gossip.FalsePositiveRate
	return s
}

// gossipConfig maps the cell's settings onto the gossip node's, with the
// addresses the cell's APIs are reached at (see advertisedAPI) in the node
// metadata.
func (c Config) gossipConfig(httpAddr, grpcAddr string) (gossip.Config, error) {
	g := gossip.DefaultConfig()
	if err := g.SetAddrs(c.Gossip.Bind, c.Gossip.Advertise, c.Gossip.SecretKey); err != nil {
		return g, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	g.NodeName = c.nodeName()
	g.Role, g.CellID = gossip.RoleCell, c.CellID
	g.HTTPAddr, g.GRPCAddr = c.advertisedAPI(httpAddr), c.advertisedAPI(grpcAddr)
	g.GatewayAddr = c.Gossip.GatewayAddress
	// The seeds are joined in the background and rejoined whenever they
	// leave the pool: a seed that is not up yet (globald starting or
	// restarting beside this cell) must not stop the cell.
	g.Seeds, g.JoinInBackground = c.Gossip.Seeds, true
	g.ProbeInterval, g.ProbeTimeout, g.SuspicionMult = c.Gossip.ProbeInterval, c.Gossip.ProbeTimeout, c.Gossip.SuspicionMult
	g.ApplyRejoin(c.Gossip.RejoinInterval, c.Gossip.RejoinMaxInterval, c.Gossip.RememberMembers, c.Gossip.RememberFor)
	return g, g.Validate()
}

// advertisedAPI returns the address the pool is told for an API listener
// bound at addr. A wildcard host (every interface: "", 0.0.0.0, ::) is no
// address another node can dial, so it takes the host the pool reaches
// this cell at: gossip.advertise's, else gossip.bind's when that names one.
// The port stays the bound one, so an advertised address that is a load
// balancer must forward the API ports unchanged. Without such a host the
// bound address is kept (and runGossip warns).
func (c Config) advertisedAPI(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !wildcardHost(host) {
		return addr
	}
	for _, a := range []string{c.Gossip.Advertise, c.Gossip.Bind} {
		if h, _, err := net.SplitHostPort(a); err == nil && !wildcardHost(h) {
			return net.JoinHostPort(h, port)
		}
	}
	return addr
}

// wildcardHost reports whether host means every interface.
func wildcardHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "" || (ip != nil && ip.IsUnspecified())
}

func (c Config) validateGossip() error {
	if c.Gossip.Bind == "" {
		return nil
	}
	if c.Gossip.SummaryInterval <= 0 {
		return fmt.Errorf("%w: gossip.summary_interval = %v: must be positive", ErrConfig, c.Gossip.SummaryInterval)
	}
	if err := c.summaryConfig().Validate(); err != nil {
		return fmt.Errorf("%w: gossip: %v", ErrConfig, err)
	}
	if a := c.Gossip.GatewayAddress; a != "" {
		host, port, err := net.SplitHostPort(a)
		switch {
		case err != nil:
			return fmt.Errorf("%w: gossip.gateway_address = %q: not host:port: %v", ErrConfig, a, err)
		case wildcardHost(host) || port == "0" || port == "":
			return fmt.Errorf("%w: gossip.gateway_address = %q: must name a host and port another gateway can dial", ErrConfig, a)
		case len(a) > gossip.MaxAddrLen:
			return fmt.Errorf("%w: gossip.gateway_address = %q: longer than %d bytes", ErrConfig, a, gossip.MaxAddrLen)
		}
	}
	_, err := c.gossipConfig("127.0.0.1:1", "127.0.0.1:2")
	return err
}

// summarize builds the cell's summary with b: every indexed router block
// sampled by its depth, the blocks the events reported and the approximate
// blocks of pods without events alike, so a cell whose pods publish no
// events still tells the global tier what it caches. One Builder serves the
// cell's whole life, so the filter's shape (and with it delta shipping)
// stays stable across generations.
//
// Every generation is built afresh from what the index holds, so an
// approximate block leaves the summary with the first generation after it
// left the index: at most approximate.ttl after its last use (plus the
// expiry period, a quarter of the TTL at most 1s) and one summary_interval;
// globald then drops it when that generation reaches it. Speculative blocks
// are left out: they live about as long as one generation.
func summarize(b *gossip.Builder, a *events.Applier, l *index.Learner) *gossip.Summary {
	b.Reset()
	add := func(h index.BlockHash, depth int) { b.Add(h, depth) }
	a.ForEachBlock(add)
	if l != nil {
		l.ForEachApproximate(add)
	}
	return b.Build()
}

// Summary builds with b the summary the cell publishes to the global tier
// (for tests and tools that stand in for gossip).
func (c *Cell) Summary(b *gossip.Builder) *gossip.Summary {
	return summarize(b, c.applier, c.learner)
}

// cellLoad is the load the cell gossips.
func (c *Cell) cellLoad() gossip.Load {
	var l gossip.Load
	blocks := map[string]int{}
	c.router.tracker.Snapshot(func(pod string, u *load.Usage) {
		l.ActiveRequests += u.Requests
		l.ActiveBlocks += u.Blocks
		blocks[pod] = u.Blocks
	})
	total := 0
	live := make([]int, 0, len(blocks))
	for _, p := range c.reg.Snapshot() {
		if p.State != events.StateDead {
			l.Pods++
			total += c.router.podConfig(p.ID).KVBlocks
			live = append(live, blocks[p.ID])
		}
	}
	l.SetLightest(live)
	l.FreeBlocks = max(0, total-l.ActiveBlocks)
	c.bandLoad(&l)
	return l
}

// gossipKeyring is the pool's keyring file: read at New (a bad one stops
// the cell), then every auth.reload_interval, each change applied to the
// node.
type gossipKeyring struct {
	w    *reload.Watcher
	keys [][]byte // as first read
	node atomic.Pointer[gossip.Node]
}

func newGossipKeyring(cfg Config, sec *security) (*gossipKeyring, error) {
	if cfg.Gossip.KeyringFile == "" {
		return nil, nil
	}
	k := &gossipKeyring{}
	var err error
	k.w, err = reload.New([]string{cfg.Gossip.KeyringFile}, cfg.Auth.ReloadInterval, func(data [][]byte) error {
		keys, err := gossip.ParseKeyring(data[0])
		if err == nil {
			if n := k.node.Load(); n != nil {
				err = n.SetKeyring(keys)
			} else {
				k.keys = keys
			}
		}
		if k.node.Load() != nil {
			sec.m.Reloaded("keyring", err)
		}
		return err
	}, func(err error) { sec.log.Warn("gossip keyring refused; the keys in force stay", "err", err) })
	if err != nil {
		return nil, fmt.Errorf("%w: gossip.keyring_file: %v", ErrConfig, err)
	}
	return k, nil
}

// runGossip joins the pool and publishes a summary every SummaryInterval
// until ctx ends, then leaves the pool.
func (c *Cell) runGossip(ctx context.Context) error {
	gcfg, err := c.cfg.gossipConfig(c.HTTPAddr(), c.GRPCAddr())
	if err != nil {
		return err
	}
	for _, a := range []string{gcfg.HTTPAddr, gcfg.GRPCAddr} {
		if h, _, err := net.SplitHostPort(a); err == nil && wildcardHost(h) {
			c.log.Warn("gossip: an API listens on every interface and neither gossip.advertise nor gossip.bind names a host, "+
				"so the pool is told an address no other host can dial; set gossip.advertise (celld --gossip-advertise)", "addr", a)
		}
	}
	if c.keyring != nil {
		gcfg.SecretKey, gcfg.ExtraKeys = c.keyring.keys[0], c.keyring.keys[1:]
	}
	node, err := gossip.Start(gcfg, c.sharer)
	if err != nil {
		return fmt.Errorf("cell: gossip: %w", err)
	}
	stopSharer := c.runSharer(ctx, node)
	c.node.Store(node)
	if c.keyring != nil {
		c.keyring.node.Store(node)
		kctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); c.keyring.w.Run(kctx) }()
		defer func() { cancel(); <-done }()
	}
	// An unencrypted pool on a reachable address lets anyone join it and
	// announce a cell.
	edge.WarnIfExposed(c.log, len(gcfg.SecretKey) > 0, edge.Listener{Name: "gossip", Addr: c.cfg.Gossip.Bind})
	c.gossipAddr.Store(node.Addr())
	defer func() {
		c.node.Store(nil)
		stopSharer()
		node.Leave(time.Second)
		node.Shutdown()
	}()
	var pool poolWatch
	builder, err := gossip.NewBuilder(c.cfg.summaryConfig())
	if err != nil {
		return err
	}
	t := time.NewTicker(c.cfg.Gossip.SummaryInterval)
	defer t.Stop()
	for {
		pool.check(node, c.log)
		if _, err := node.Publish(summarize(builder, c.applier, c.learner), c.cellLoad()); err != nil {
			c.log.Warn("gossip: publish failed", "err", err)
		}
		known, models := c.servedModels()
		if _, err := node.SetModels(known, models, time.Second); err != nil {
			c.log.Warn("gossip: advertising the models failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// GossipAddr returns the cell's gossip address once it joined ("" before,
// or for a standalone cell).
func (c *Cell) GossipAddr() string {
	s, _ := c.gossipAddr.Load().(string)
	return s
}
