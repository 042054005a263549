package global

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/reload"
)

// PoolConfig says how globald joins the gossip pool of cells.
type PoolConfig struct {
	// Bind is the memberlist address (host:port, port 0 picks one).
	Bind string `yaml:"bind"`
	// Advertise is the address others reach this node at (optional).
	Advertise string `yaml:"advertise"`
	// Seeds are pool members to join (host:port).
	Seeds []string `yaml:"seeds"`
	// SecretKey is the pool's key, base64 of 16, 24 or 32 bytes; empty
	// means an unencrypted pool.
	SecretKey string `yaml:"secret_key"`
	// KeyringFile, instead of SecretKey, holds the pool's keys, one base64
	// key a line, the first the one this node encrypts with; it is read
	// again every ReloadInterval, so keys rotate without a restart
	// (gossip.ParseKeyring gives the three steps).
	KeyringFile string `yaml:"keyring_file"`
	// ReloadInterval is how often KeyringFile is read (0: the default of
	// package reload).
	ReloadInterval time.Duration `yaml:"reload_interval"`
	// Name is this replica's node name (default "global/<bind>").
	Name string `yaml:"name"`
	// ProbeInterval and ProbeTimeout tune failure detection of cells.
	ProbeInterval time.Duration `yaml:"probe_interval"`
	ProbeTimeout  time.Duration `yaml:"probe_timeout"`
	// SuspicionMult scales how long a suspect member has to refute before
	// it is declared dead (see gossip.Config; 0: its default).
	SuspicionMult int `yaml:"suspicion_mult"`
	// RejoinInterval is how often the node joins the seeds and the
	// remembered members that are not in the pool (0: the default 5s);
	// RejoinMaxInterval caps its backoff (0: 1m). See gossip.Config.
	RejoinInterval    time.Duration `yaml:"rejoin_interval"`
	RejoinMaxInterval time.Duration `yaml:"rejoin_max_interval"`
	// RememberMembers bounds how many departed members' addresses are
	// rejoined (0: the default 64; negative: none), each for RememberFor
	// (0: the default 30m).
	RememberMembers int           `yaml:"remember_members"`
	RememberFor     time.Duration `yaml:"remember_for"`
}

// DefaultPoolConfig binds memberlist's usual port on loopback.
func DefaultPoolConfig() PoolConfig {
	d := gossip.DefaultConfig()
	return PoolConfig{Bind: "127.0.0.1:7946", ProbeInterval: d.ProbeInterval, ProbeTimeout: d.ProbeTimeout,
		RejoinInterval: d.RejoinInterval, RejoinMaxInterval: d.RejoinMaxInterval, RememberMembers: d.RememberMembers, RememberFor: d.RememberFor}
}

func (p PoolConfig) gossipConfig(httpAddr, grpcAddr string) (gossip.Config, error) {
	g := gossip.DefaultConfig()
	if err := g.SetAddrs(p.Bind, p.Advertise, p.SecretKey); err != nil {
		return g, fmt.Errorf("%w: pool: %v", ErrInvalidConfig, err)
	}
	g.NodeName = p.Name
	if g.NodeName == "" {
		g.NodeName = "global/" + httpAddr
	}
	g.Role, g.HTTPAddr, g.GRPCAddr, g.Seeds = gossip.RoleGlobal, httpAddr, grpcAddr, p.Seeds
	g.ProbeInterval, g.ProbeTimeout = p.ProbeInterval, p.ProbeTimeout
	if p.SuspicionMult > 0 {
		g.SuspicionMult = p.SuspicionMult
	}
	g.ApplyRejoin(p.RejoinInterval, p.RejoinMaxInterval, p.RememberMembers, p.RememberFor)
	return g, g.Validate()
}

// Daemon is a global replica joined to the pool.
type Daemon struct {
	*Global
	node    *gossip.Node
	pool    PoolConfig
	keyring *reload.Watcher // nil without PoolConfig.KeyringFile
}

// NewDaemon builds the router, opens its listeners and joins the pool (the
// join is retried in Run until a seed answers).
func NewDaemon(cfg Config, pool PoolConfig, log *slog.Logger, opts ...Option) (*Daemon, error) {
	if log == nil {
		log = slog.Default()
	}
	d := &Daemon{pool: pool}
	dir := &lazyDirectory{}
	g, err := New(cfg, dir, nil, log, opts...)
	if err != nil {
		return nil, err
	}
	gcfg, err := pool.gossipConfig(g.HTTPAddr(), g.GRPCAddr())
	if err != nil {
		return nil, err
	}
	// The seeds are joined in the background and rejoined whenever they
	// leave the pool: a seed that is not up yet must not stop globald.
	gcfg.JoinInBackground = true
	if pool.KeyringFile != "" {
		if pool.SecretKey != "" {
			g.closeListeners()
			return nil, fmt.Errorf("%w: pool: keyring_file and secret_key are exclusive", ErrInvalidConfig)
		}
		if d.keyring, err = reload.New([]string{pool.KeyringFile}, pool.ReloadInterval, func(data [][]byte) error {
			keys, err := gossip.ParseKeyring(data[0])
			if err != nil {
				return err
			}
			if d.node == nil { // the first read, before the node starts
				gcfg.SecretKey, gcfg.ExtraKeys = keys[0], keys[1:]
				return nil
			}
			err = d.node.SetKeyring(keys)
			g.sec.m.Reloaded("keyring", err)
			return err
		}, func(err error) { log.Warn("gossip keyring refused; the keys in force stay", "err", err) }); err != nil {
			g.closeListeners()
			return nil, fmt.Errorf("%w: pool: keyring_file: %v", ErrInvalidConfig, err)
		}
	}
	if d.node, err = gossip.Start(gcfg, &peerDrains{rt: g.rt, log: log}); err != nil {
		g.closeListeners()
		return nil, fmt.Errorf("global: gossip: %w", err)
	}
	dir.dir = NewGossipDirectory(d.node.Table())
	g.attachPool(d.node)
	// An unencrypted pool on a reachable address lets anyone join it and
	// announce a cell (which mutual TLS would then refuse to use).
	edge.WarnIfExposed(log, len(gcfg.SecretKey) > 0, edge.Listener{Name: "gossip", Addr: pool.Bind})
	d.Global = g
	g.shareDrain = d.shareDrain
	return d, nil
}

// GossipAddr is the replica's memberlist address: a seed for cells.
func (d *Daemon) GossipAddr() string { return d.node.Addr() }

// NodeName is the replica's name in the pool (PoolConfig.Name, or
// "global/" and its HTTP address): its service instance in traces.
func (d *Daemon) NodeName() string { return d.node.Name() }

// Run serves until ctx ends (the node joins its seeds in the background
// and rejoins them and the members it knew whenever they leave the pool);
// then it leaves the pool.
func (d *Daemon) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var joiner sync.WaitGroup
	defer func() {
		cancel()
		joiner.Wait()
		d.node.Leave(time.Second)
		d.node.Shutdown()
	}()
	if d.keyring != nil {
		joiner.Add(1)
		go func() { defer joiner.Done(); d.keyring.Run(ctx) }()
	}
	joiner.Add(1)
	go func() { defer joiner.Done(); watchPool(ctx, d.node, time.Second, d.log) }()
	return d.Global.Run(ctx)
}

// lazyDirectory lets the router be built before the gossip node (whose
// metadata needs the router's bound addresses).
type lazyDirectory struct{ dir Directory }

func (l *lazyDirectory) Cells() []CellView {
	if l.dir == nil {
		return nil
	}
	return l.dir.Cells()
}

// CellsAndDepths implements IndexedDirectory when the directory does.
func (l *lazyDirectory) CellsAndDepths() ([]CellView, DepthsFunc) {
	if ix, ok := l.dir.(IndexedDirectory); ok {
		return ix.CellsAndDepths()
	}
	return l.Cells(), nil
}
