package gossip

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// ErrNotCell is returned by Publish and SetLoad on a node that is not a cell.
var ErrNotCell = errors.New("gossip: node is not a cell")

// ErrUnknownMember is returned when a message is addressed to a node that is
// not a live member.
var ErrUnknownMember = errors.New("gossip: unknown member")

// ErrClosed is returned by methods called after Shutdown or Kill.
var ErrClosed = errors.New("gossip: node is shut down")

// Node is one member of the pool: a memberlist instance plus the summary
// machinery. A cell node publishes its summaries; every node keeps a Table
// of the cells it hears from. All methods are safe for concurrent use.
type Node struct {
	cfg    Config
	logger *log.Logger
	meta   atomic.Pointer[NodeMeta] // what the node advertises (SetModels changes it)
	keys   *memberlist.Keyring      // nil when gossip is not encrypted
	ml     atomic.Pointer[memberlist.Memberlist]
	bq     *memberlist.TransmitLimitedQueue
	table  *Table
	events *eventQueue
	peers  PeerReceiver // obs's, when it implements it

	mu       sync.Mutex
	members  map[string]*memberRecord
	departed map[string]departed // by name: who to rejoin (see rejoin.go)
	rejoin   rejoinState

	addr string // the bound host:port, set once at Start

	pubMu sync.Mutex
	pub   *Publisher // nil unless a cell
	load  Load
	seq   uint64
	// lastWaits are the band waits last announced (see bandsLocked).
	lastWaits BandWaits

	fetchMu      sync.Mutex
	fetchPending map[endpointKey]bool // replica -> force a snapshot
	fetchSig     chan struct{}
	serveCh      chan *FetchRequest

	stats stats

	stop   chan struct{}
	wg     sync.WaitGroup
	closed atomic.Bool
}

// memberRecord is a member and when it was last seen to change state.
type memberRecord struct {
	m     Member
	since time.Time
}

// Start creates the node's memberlist, starts its goroutines and, when
// cfg.Seeds is not empty, joins them (returning an error, after shutting
// the node down, if none answers; with cfg.JoinInBackground the rejoin
// loop joins them instead, retrying). obs may be nil.
func Start(cfg Config, obs Observer) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	n := &Node{
		cfg:          cfg,
		logger:       cfg.Logger,
		table:        NewTable(nil),
		events:       newEventQueue(),
		members:      make(map[string]*memberRecord),
		departed:     make(map[string]departed),
		fetchPending: make(map[endpointKey]bool),
		fetchSig:     make(chan struct{}, 1),
		serveCh:      make(chan *FetchRequest, 64),
		stop:         make(chan struct{}),
	}
	if n.logger == nil {
		n.logger = log.New(io.Discard, "", 0)
	}
	n.peers, _ = obs.(PeerReceiver)
	n.table.self = cfg.CellID
	meta := cfg.meta()
	n.meta.Store(&meta)
	if cfg.Role == RoleCell {
		pub, err := NewPublisher(cfg.CellID, uint64(time.Now().UnixNano()), DefaultHistory)
		if err != nil {
			return nil, err
		}
		n.pub = pub
	}
	n.bq = &memberlist.TransmitLimitedQueue{NumNodes: n.numMembers, RetransmitMult: 4}

	mc, err := n.memberlistConfig()
	if err != nil {
		return nil, err
	}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("gossip: start: %w", err)
	}
	n.ml.Store(ml)
	// The bound address, read once: memberlist updates its node records in
	// place under its own lock, so reading them later would race.
	ln := ml.LocalNode()
	n.addr = net.JoinHostPort(ln.Addr.String(), strconv.Itoa(int(ln.Port)))

	n.wg.Add(5)
	go func() { defer n.wg.Done(); n.events.run(obs, n.stop) }()
	go func() { defer n.wg.Done(); n.fetchLoop() }()
	go func() { defer n.wg.Done(); n.serveLoop() }()
	go func() { defer n.wg.Done(); n.resyncLoop() }()
	go func() { defer n.wg.Done(); n.rejoinLoop() }()

	if len(cfg.Seeds) > 0 && !cfg.JoinInBackground {
		if _, err := n.Join(cfg.Seeds); err != nil {
			n.Kill()
			return nil, err
		}
	}
	return n, nil
}

func (n *Node) memberlistConfig() (*memberlist.Config, error) {
	c := n.cfg
	mc := memberlist.DefaultLANConfig()
	mc.Name = c.NodeName
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	mc.GossipInterval = c.GossipInterval
	mc.GossipNodes = c.GossipNodes
	mc.ProbeInterval = c.ProbeInterval
	mc.ProbeTimeout = c.ProbeTimeout
	mc.SuspicionMult = c.SuspicionMult
	mc.PushPullInterval = c.PushPullInterval
	mc.TCPTimeout = c.TCPTimeout
	// Summary payloads are Bloom bits near half full or roaring bitmaps,
	// neither of which LZW shrinks; headers are tiny.
	mc.EnableCompression = false
	mc.Logger = n.logger
	if len(c.SecretKey) > 0 {
		kr, err := memberlist.NewKeyring(c.ExtraKeys, c.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("gossip: keyring: %w", err)
		}
		mc.Keyring = kr
		n.keys = kr
	}
	mc.Delegate = &delegate{n: n}
	mc.Events = &eventDelegate{n: n}
	return mc, nil
}

func (n *Node) numMembers() int {
	if ml := n.ml.Load(); ml != nil {
		return ml.NumMembers()
	}
	return 1
}

// Join contacts the given host:port seeds and returns how many answered; it
// fails only if none did.
func (n *Node) Join(seeds []string) (int, error) {
	if n.closed.Load() {
		return 0, ErrClosed
	}
	k, err := n.ml.Load().Join(seeds)
	if err != nil {
		return k, fmt.Errorf("gossip: join %v: %w", seeds, err)
	}
	return k, nil
}

// Addr returns the host:port other nodes reach this one at (the bound port
// when Config.BindPort was 0): what to give them as a seed.
func (n *Node) Addr() string { return n.addr }

// Name returns the node's name.
func (n *Node) Name() string { return n.cfg.NodeName }

// Table returns the node's table of cells (never nil). A cell node's table
// holds its peer cells, not itself.
func (n *Node) Table() *Table { return n.table }

// LocalMember returns this node as a Member.
func (n *Node) LocalMember() Member {
	return memberFromMeta(n.cfg.NodeName, n.Addr(), *n.meta.Load(), StateAlive)
}

// Members returns every member this node knows, itself included, sorted by
// name: the live ones (alive or suspect) and those that died or left within
// Config.DeadRetention (as StateDead).
func (n *Node) Members() []Member {
	live := make(map[string]State)
	if ml := n.ml.Load(); ml != nil && !n.closed.Load() {
		// Members lists the nodes memberlist does not consider dead; only
		// their names are read (memberlist updates the other fields in place
		// under its lock). Suspicion shows through the member records.
		for _, m := range ml.Members() {
			live[m.Name] = StateAlive
		}
	}
	now := time.Now()
	n.mu.Lock()
	out := make([]Member, 0, len(n.members))
	for name, r := range n.members {
		m := r.m
		if _, ok := live[name]; ok && m.State <= StateSuspect {
			// Alive or suspect as the last event said.
		} else if m.State <= StateSuspect {
			m.State = StateDead // gone from memberlist; the leave event is on its way
		} else if now.Sub(r.since) > n.cfg.DeadRetention {
			delete(n.members, name)
			continue
		}
		out = append(out, m)
	}
	n.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Publish makes s the cell's next summary generation with the given load,
// announces it in a header broadcast, and returns the generation number.
// s must not be modified afterwards.
func (n *Node) Publish(s *Summary, load Load) (uint64, error) {
	if n.pub == nil {
		return 0, ErrNotCell
	}
	if n.closed.Load() {
		return 0, ErrClosed
	}
	if s == nil {
		return 0, errors.New("gossip: publish: nil summary")
	}
	n.pubMu.Lock()
	gen := n.pub.Publish(s)
	n.load = load
	n.seq++
	h := n.currentHeaderLocked()
	bands := n.bandsLocked(h)
	n.pubMu.Unlock()
	n.bq.QueueBroadcast(&headerBroadcast{cell: h.Cell, msg: EncodeHeader(h)})
	if bands != nil {
		n.bq.QueueBroadcast(bands)
	}
	return gen, nil
}

// SetLoad announces a new load without a new summary generation. The
// load's band waits (Load.Waits) go in a bands message beside the header
// (see BandLoad), and only while some are not zero or just became zero.
func (n *Node) SetLoad(load Load) error {
	if n.pub == nil {
		return ErrNotCell
	}
	if n.closed.Load() {
		return ErrClosed
	}
	n.pubMu.Lock()
	n.load = load
	n.seq++
	h := n.currentHeaderLocked()
	bands := n.bandsLocked(h)
	n.pubMu.Unlock()
	n.bq.QueueBroadcast(&headerBroadcast{cell: h.Cell, msg: EncodeHeader(h)})
	if bands != nil {
		n.bq.QueueBroadcast(bands)
	}
	return nil
}

// currentHeaderLocked returns the latest header; n.pubMu must be held.
func (n *Node) currentHeaderLocked() *Header {
	h := &Header{Cell: n.pub.Cell(), Node: n.cfg.NodeName, Epoch: n.pub.Epoch(), Gen: n.pub.Gen(), Seq: n.seq, Load: n.load}
	if s := n.pub.Current(); s != nil {
		h.Params, h.Elements = s.Params(), s.Elements()
	}
	return h
}

// Leave announces that this node leaves the pool, waiting up to timeout
// for the announcement to go out; the node keeps running until Shutdown.
func (n *Node) Leave(timeout time.Duration) error {
	if n.closed.Load() {
		return ErrClosed
	}
	if err := n.ml.Load().Leave(timeout); err != nil {
		return fmt.Errorf("gossip: leave: %w", err)
	}
	return nil
}

// Shutdown leaves the pool (waiting up to Config.LeaveTimeout), then stops
// memberlist and the node's goroutines and waits for them. Calling it again
// is a no-op.
func (n *Node) Shutdown() error {
	if n.closed.Load() {
		return nil
	}
	lerr := n.Leave(n.cfg.LeaveTimeout)
	return errors.Join(lerr, n.close())
}

// Kill stops the node without announcing a leave, as a crash would: the
// others find out through failure detection. For tests and fault injection.
func (n *Node) Kill() error { return n.close() }

func (n *Node) close() error {
	if !n.closed.CompareAndSwap(false, true) {
		return nil
	}
	err := n.ml.Load().Shutdown()
	close(n.stop)
	n.wg.Wait()
	if err != nil {
		return fmt.Errorf("gossip: shutdown: %w", err)
	}
	return nil
}
