package replica

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/gossip"
)

// Sender sends a body to every live peer (gossip.Node.SendPeers). It may
// be called concurrently.
type Sender interface {
	SendPeers(kind uint8, body []byte, reliable bool) (int, error)
}

// Config tunes a Sharer.
type Config struct {
	// FlushInterval is how often the local changes are sent (batched).
	FlushInterval time.Duration
	// TTL bounds how long a peer's request counts without news of it.
	TTL time.Duration
	// MaxPending bounds the changes waiting for the next flush; more are
	// dropped (and counted), which the next resync then repairs.
	MaxPending int
	// ResyncInterval is how often every ticket still in flight is sent
	// again (load.OpLive), which repairs a lost start, first token or
	// change dropped from a full queue, and renews the peers' lease on it.
	ResyncInterval time.Duration
	// Lease bounds how long a ticket of a peer that resyncs counts without
	// news of it: a lost done, or a peer gone silent without leaving the
	// pool, costs at most this. It must exceed 2 × ResyncInterval so that
	// one lost resync packet does not free a live ticket.
	Lease time.Duration
}

// DefaultConfig flushes every 20ms, resyncs every second with a 5-second
// lease, expires the tickets of a peer that never resyncs (an older
// version) after 5 minutes and keeps up to 65536 pending changes.
func DefaultConfig() Config {
	return Config{FlushInterval: 20 * time.Millisecond, TTL: 5 * time.Minute, MaxPending: 65536,
		ResyncInterval: time.Second, Lease: 5 * time.Second}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.FlushInterval <= 0:
		return fmt.Errorf("replica: FlushInterval %v must be positive", c.FlushInterval)
	case c.TTL <= 0:
		return fmt.Errorf("replica: TTL %v must be positive", c.TTL)
	case c.MaxPending < 1:
		return fmt.Errorf("replica: MaxPending %d must be at least 1", c.MaxPending)
	case c.ResyncInterval <= 0:
		return fmt.Errorf("replica: ResyncInterval %v must be positive", c.ResyncInterval)
	case c.Lease <= 2*c.ResyncInterval:
		return fmt.Errorf("replica: Lease %v must exceed twice ResyncInterval %v", c.Lease, c.ResyncInterval)
	}
	return nil
}

// Stats counts a Sharer's traffic.
type Stats struct {
	// Sent and Received count load changes; Dropped those that did not fit
	// the pending queue; Malformed the peer bodies that did not decode.
	Sent, Received, Dropped, Malformed uint64
	// Resent counts the in-flight tickets sent again by resyncs (not in
	// Sent); Repaired the peer tickets a resync started or marked prefilled
	// because their start or first token was lost.
	Resent, Repaired uint64
	// Expired counts peer tickets freed by the lease or TTL, Orphaned those
	// freed because their replica died, left or restarted.
	Expired, Orphaned uint64
	// Drains counts drains received.
	Drains uint64
}

// Sharer shares one replica's load with its peers and applies theirs (see
// the package doc). It is the gossip node's Observer (gossip.PeerReceiver
// and gossip.Observer). Its methods are safe for concurrent use.
type Sharer struct {
	cfg     Config
	tr      *load.Tracker
	run     uint64
	now     func() time.Time
	onDrain func(from string, d gossip.Drain)

	send atomic.Pointer[senderBox]

	mu      sync.Mutex
	pending []load.Change
	live    map[uint64]load.Change // the local tickets in flight, as OpLive
	peers   map[string]peerRun     // peer name -> its current run

	sent, received, dropped, malformed, resent, repaired, expired, orphaned, drains atomic.Uint64
}

// peerRun is what a Sharer knows of a peer: its current run, and whether
// it resyncs (it sent an OpLive), which decides its tickets' expiry.
type peerRun struct {
	run     uint64
	resyncs bool
}

type senderBox struct{ s Sender }

var (
	_ gossip.PeerReceiver = (*Sharer)(nil)
	_ gossip.Observer     = (*Sharer)(nil)
)

// New returns a Sharer of tr's load (it becomes tr's observer). onDrain
// receives the drains peers send; it is called from the gossip node's
// goroutines and must not block.
func New(cfg Config, tr *load.Tracker, onDrain func(from string, d gossip.Drain)) (*Sharer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sharer{cfg: cfg, tr: tr, run: uint64(time.Now().UnixNano()), now: time.Now, onDrain: onDrain,
		live: map[uint64]load.Change{}, peers: map[string]peerRun{}}
	tr.SetObserver(s.record)
	return s, nil
}

// record keeps the local ticket's state for the resyncs, and queues the
// change while a sender is attached. The state is kept without a sender
// too, so that the requests routed before the cell joined its pool are
// resynced once it has.
func (s *Sharer) record(c load.Change) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch c.Op {
	case load.OpStart:
		l := c
		l.Op = load.OpLive
		s.live[c.ID] = l
	case load.OpFirstToken:
		if l, ok := s.live[c.ID]; ok {
			l.PrefillDone = true
			s.live[c.ID] = l
		}
	case load.OpDone:
		delete(s.live, c.ID)
	}
	if s.send.Load() == nil {
		return
	}
	if len(s.pending) >= s.cfg.MaxPending {
		s.dropped.Add(1)
		return
	}
	s.pending = append(s.pending, c)
}

// Run sends the pending changes through send every FlushInterval, every
// ticket in flight every ResyncInterval, and expires the peers' tickets,
// until ctx ends; then it detaches send.
func (s *Sharer) Run(ctx context.Context, send Sender) {
	s.send.Store(&senderBox{send})
	defer s.detach()
	flush := time.NewTicker(s.cfg.FlushInterval)
	defer flush.Stop()
	resync := time.NewTicker(s.cfg.ResyncInterval)
	defer resync.Stop()
	expireEvery := min(s.cfg.Lease/4, s.cfg.TTL/4, time.Second)
	expire := time.NewTicker(expireEvery)
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			s.Flush(send)
		case <-resync.C:
			s.Resync(send)
		case <-expire.C:
			s.expired.Add(uint64(s.tr.ExpireRemote(s.now())))
		}
	}
}

// detach stops the queueing of changes and drops those queued.
func (s *Sharer) detach() {
	s.mu.Lock()
	s.send.Store(nil)
	s.pending = nil
	s.mu.Unlock()
}

// Flush sends the pending changes now, best effort.
func (s *Sharer) Flush(send Sender) {
	s.mu.Lock()
	cs := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(cs) == 0 {
		return
	}
	for _, body := range EncodeChanges(s.run, cs, gossip.MaxPeerBody) {
		// Best effort: a peer that misses a packet is repaired by the TTL.
		send.SendPeers(KindLoad, body, false)
	}
	s.sent.Add(uint64(len(cs)))
}

// Resync flushes the pending changes, then sends every local ticket in
// flight as an OpLive, best effort. The flush comes first so that a peer
// never gets a ticket's live state before its older changes.
func (s *Sharer) Resync(send Sender) {
	s.Flush(send)
	s.mu.Lock()
	cs := make([]load.Change, 0, len(s.live))
	for _, c := range s.live {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, body := range EncodeChanges(s.run, cs, gossip.MaxPeerBody) {
		send.SendPeers(KindLoad, body, false)
	}
	s.resent.Add(uint64(len(cs)))
}

// Drain sends a drain to every peer, reliably, and returns how many peers
// it reached.
func (s *Sharer) Drain(d gossip.Drain) (int, error) {
	b := s.send.Load()
	if b == nil {
		return 0, nil // no pool: no peers
	}
	return b.s.SendPeers(KindDrain, gossip.EncodeDrain(d), true)
}

// origin names one run of a peer in the tracker.
func origin(name string, run uint64) string { return name + "#" + strconv.FormatUint(run, 10) }

// OnPeerMessage implements gossip.PeerReceiver.
func (s *Sharer) OnPeerMessage(m gossip.PeerMessage) {
	switch m.Kind {
	case KindLoad:
		run, cs, err := DecodeChanges(m.Body)
		if err != nil {
			s.malformed.Add(1)
			return
		}
		resyncs := false
		for _, c := range cs {
			resyncs = resyncs || c.Op == load.OpLive
		}
		s.mu.Lock()
		old, known := s.peers[m.From]
		if run < old.run {
			s.mu.Unlock()
			return // a batch of the peer's former life, late
		}
		// A run that resynced once keeps resyncing; a new run must show it.
		resyncs = resyncs || (run == old.run && old.resyncs)
		s.peers[m.From] = peerRun{run: run, resyncs: resyncs}
		s.mu.Unlock()
		if known && run > old.run {
			s.orphaned.Add(uint64(s.tr.DropOrigin(origin(m.From, old.run))))
		}
		// A peer that resyncs renews its tickets every ResyncInterval, so
		// they live a Lease; one that never does (an older version) only
		// at its changes, so they live the TTL.
		ttl := s.cfg.TTL
		if resyncs {
			ttl = s.cfg.Lease
		}
		now := s.now()
		o := origin(m.From, run)
		for _, c := range cs {
			if s.tr.ApplyRemote(o, c, now, ttl) && c.Op == load.OpLive {
				s.repaired.Add(1)
			}
		}
		s.received.Add(uint64(len(cs)))
	case KindDrain:
		d, err := gossip.DecodeDrain(m.Body)
		if err != nil {
			s.malformed.Add(1)
			return
		}
		s.drains.Add(1)
		if s.onDrain != nil {
			s.onDrain(m.From, d)
		}
	default:
		s.malformed.Add(1)
	}
}

// OnChange implements gossip.Observer: a peer that died or left takes its
// in-flight load with it.
func (s *Sharer) OnChange(e gossip.Event) {
	if e.Kind != gossip.EventLeave {
		return
	}
	s.mu.Lock()
	p, ok := s.peers[e.Member.Name]
	delete(s.peers, e.Member.Name)
	s.mu.Unlock()
	if ok {
		s.orphaned.Add(uint64(s.tr.DropOrigin(origin(e.Member.Name, p.run))))
	}
}

// Stats returns the counters.
func (s *Sharer) Stats() Stats {
	return Stats{Sent: s.sent.Load(), Received: s.received.Load(), Dropped: s.dropped.Load(), Malformed: s.malformed.Load(),
		Resent: s.resent.Load(), Repaired: s.repaired.Load(),
		Expired: s.expired.Load(), Orphaned: s.orphaned.Load(), Drains: s.drains.Load()}
}
