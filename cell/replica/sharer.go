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
	// dropped (and counted), which the TTL then repairs.
	MaxPending int
}

// DefaultConfig flushes every 20ms, expires a peer's tickets after 5
// minutes and keeps up to 65536 pending changes.
func DefaultConfig() Config {
	return Config{FlushInterval: 20 * time.Millisecond, TTL: 5 * time.Minute, MaxPending: 65536}
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
	}
	return nil
}

// Stats counts a Sharer's traffic.
type Stats struct {
	// Sent and Received count load changes; Dropped those that did not fit
	// the pending queue; Malformed the peer bodies that did not decode.
	Sent, Received, Dropped, Malformed uint64
	// Expired counts peer tickets freed by the TTL, Orphaned those freed
	// because their replica died, left or restarted.
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
	runs    map[string]uint64 // peer name -> its current run

	sent, received, dropped, malformed, expired, orphaned, drains atomic.Uint64
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
	s := &Sharer{cfg: cfg, tr: tr, run: uint64(time.Now().UnixNano()), now: time.Now, onDrain: onDrain, runs: map[string]uint64{}}
	tr.SetObserver(s.record)
	return s, nil
}

// record queues a local change while a sender is attached.
func (s *Sharer) record(c load.Change) {
	if s.send.Load() == nil {
		return
	}
	s.mu.Lock()
	if len(s.pending) >= s.cfg.MaxPending {
		s.mu.Unlock()
		s.dropped.Add(1)
		return
	}
	s.pending = append(s.pending, c)
	s.mu.Unlock()
}

// Run sends the pending changes through send every FlushInterval and
// expires the peers' tickets, until ctx ends; then it detaches send.
func (s *Sharer) Run(ctx context.Context, send Sender) {
	s.send.Store(&senderBox{send})
	defer s.send.Store(nil)
	flush := time.NewTicker(s.cfg.FlushInterval)
	defer flush.Stop()
	expireEvery := min(s.cfg.TTL/4, time.Second)
	expire := time.NewTicker(expireEvery)
	defer expire.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			s.Flush(send)
		case <-expire.C:
			s.expired.Add(uint64(s.tr.ExpireRemote(s.now())))
		}
	}
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
		s.mu.Lock()
		old, known := s.runs[m.From]
		if !known || run > old {
			s.runs[m.From] = run
		}
		s.mu.Unlock()
		if run < old {
			return // a batch of the peer's former life, late
		}
		if known && run > old {
			s.orphaned.Add(uint64(s.tr.DropOrigin(origin(m.From, old))))
		}
		now := s.now()
		o := origin(m.From, run)
		for _, c := range cs {
			s.tr.ApplyRemote(o, c, now, s.cfg.TTL)
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
	run, ok := s.runs[e.Member.Name]
	delete(s.runs, e.Member.Name)
	s.mu.Unlock()
	if ok {
		s.orphaned.Add(uint64(s.tr.DropOrigin(origin(e.Member.Name, run))))
	}
}

// Stats returns the counters.
func (s *Sharer) Stats() Stats {
	return Stats{Sent: s.sent.Load(), Received: s.received.Load(), Dropped: s.dropped.Load(), Malformed: s.malformed.Load(),
		Expired: s.expired.Load(), Orphaned: s.orphaned.Load(), Drains: s.drains.Load()}
}
