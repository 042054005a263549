package replica

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/gossip"
)

// loopback is a Sender that hands every body to the peer Sharers, as the
// pool would, with the sender's name.
type loopback struct {
	from  string
	mu    sync.Mutex
	peers []*Sharer
}

func (l *loopback) SendPeers(kind uint8, body []byte, _ bool) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.peers {
		p.OnPeerMessage(gossip.PeerMessage{From: l.from, Kind: kind, Body: append([]byte(nil), body...)})
	}
	return len(l.peers), nil
}

func newSharer(t *testing.T, tr *load.Tracker, onDrain func(string, gossip.Drain)) *Sharer {
	t.Helper()
	s, err := New(DefaultConfig(), tr, onDrain)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sharerAt returns a tracker and its sharer whose clock stands at now.
func sharerAt(t *testing.T, now time.Time) (*load.Tracker, *Sharer) {
	t.Helper()
	tr := load.NewTracker()
	s := newSharer(t, tr, nil)
	s.now = func() time.Time { return now }
	return tr, s
}

// attach marks s as having a sender without running its loop (Flush is
// then called by the test).
func attach(s *Sharer, l *loopback) { s.send.Store(&senderBox{l}) }

// TestSharerBookkeeping checks the origins: a peer's tickets count, a
// restart of the peer (a new run) drops its former tickets, and its death
// drops the rest.
func TestSharerBookkeeping(t *testing.T) {
	trA, trB := load.NewTracker(), load.NewTracker()
	a := newSharer(t, trA, nil)
	var drains []gossip.Drain
	b := newSharer(t, trB, func(_ string, d gossip.Drain) { drains = append(drains, d) })
	la := &loopback{from: "cell/c/a", peers: []*Sharer{b}}
	attach(a, la)
	tk := trA.Start("p", 8, 8, "")
	trA.Start("q", 4, 0, "")
	a.Flush(la)
	if u := trB.Usage("p"); u.Requests != 1 || u.Blocks != 8 {
		t.Fatalf("b's view of p = %+v, want a's request", u)
	}
	trA.FirstToken(tk)
	trA.Done(tk)
	a.Flush(la)
	if u := trB.Usage("p"); u.Requests != 0 {
		t.Fatalf("b's view of p after done = %+v, want idle", u)
	}
	// a restarts under the same name: its old ticket on q goes at its
	// first batch.
	trA2 := load.NewTracker()
	a2 := newSharer(t, trA2, nil)
	a2.run = a.run + 1
	attach(a2, la)
	trA2.Start("p", 2, 0, "")
	a2.Flush(la)
	if trB.Usage("q").Requests != 0 || trB.Usage("p").Requests != 1 {
		t.Fatalf("after a's restart: q %+v p %+v, want q idle, p one request", trB.Usage("q"), trB.Usage("p"))
	}
	// A late batch of the former run is ignored.
	trA.Start("q", 4, 0, "")
	a.Flush(la)
	if trB.Usage("q").Requests != 0 {
		t.Fatalf("a batch of a's former run was applied")
	}
	b.OnChange(gossip.Event{Kind: gossip.EventLeave, Member: gossip.Member{Name: "cell/c/a"}})
	if trB.RemoteTickets() != 0 || trB.Usage("p").Requests != 0 {
		t.Fatalf("after a left b holds %d remote tickets", trB.RemoteTickets())
	}
	if n, err := a2.Drain(gossip.Drain{Cell: "c", Pod: "p"}); n != 1 || err != nil || len(drains) != 1 || drains[0].Pod != "p" {
		t.Fatalf("Drain = %d, %v; b got %+v", n, err, drains)
	}
	b.OnPeerMessage(gossip.PeerMessage{From: "x", Kind: KindLoad, Body: []byte{9}})
	if st := b.Stats(); st.Malformed != 1 || st.Orphaned != 2 || st.Drains != 1 {
		t.Fatalf("b's stats = %+v, want 1 malformed, 2 orphaned, 1 drain", st)
	}
}

// TestSharerTTL checks that a peer's ticket whose done never came expires.
func TestSharerTTL(t *testing.T) {
	now := time.Unix(100, 0)
	tr, s := sharerAt(t, now)
	body := EncodeChanges(1, []load.Change{{Op: load.OpStart, ID: 1, Pod: "p", Blocks: 3}}, 1100)[0]
	s.OnPeerMessage(gossip.PeerMessage{From: "peer", Kind: KindLoad, Body: body})
	if tr.ExpireRemote(now.Add(s.cfg.TTL-time.Second)) != 0 || tr.Usage("p").Requests != 1 {
		t.Fatalf("the ticket expired early")
	}
	if tr.ExpireRemote(now.Add(s.cfg.TTL+time.Second)) != 1 || tr.Usage("p").Requests != 0 {
		t.Fatalf("the ticket did not expire after the TTL")
	}
}

// lossy is a Sender that loses every body while lose is set, as a full
// socket buffer or a flaky link would, and else delivers like loopback.
type lossy struct {
	loopback
	lose bool
}

func (l *lossy) SendPeers(kind uint8, body []byte, reliable bool) (int, error) {
	if l.lose {
		return 1, nil
	}
	return l.loopback.SendPeers(kind, body, reliable)
}

// TestSharerResyncRepairsLoss loses each kind of change in turn and checks
// that the next resync repairs it: a lost start is counted, a lost first
// token marked, and a lost done frees the ticket after the lease rather
// than the TTL.
func TestSharerResyncRepairsLoss(t *testing.T) {
	trA, trB := load.NewTracker(), load.NewTracker()
	a, b := newSharer(t, trA, nil), newSharer(t, trB, nil)
	now := time.Unix(100, 0)
	b.now = func() time.Time { return now }
	l := &lossy{loopback: loopback{from: "cell/c/a", peers: []*Sharer{b}}}
	attach(a, &l.loopback)
	// lost makes a change whose flush the network loses.
	lost := func(change func()) {
		l.lose = true
		change()
		a.Flush(l)
		l.lose = false
	}

	var tk *load.Ticket
	lost(func() { tk = trA.Start("p", 8, 6, "chat") })
	if trB.Usage("p").Requests != 0 {
		t.Fatalf("a lost start arrived")
	}
	a.Resync(l)
	if u := trB.Usage("p"); u.Requests != 1 || u.Blocks != 8 || u.PrefillBlocks != 6 || u.Templates["chat"] != 1 {
		t.Fatalf("after the resync b sees %+v, want a's request with its prefill", u)
	}

	lost(func() { trA.FirstToken(tk) })
	if trB.Usage("p").PrefillBlocks != 6 {
		t.Fatalf("a lost first token arrived")
	}
	a.Resync(l)
	if u := trB.Usage("p"); u.Requests != 1 || u.PrefillBlocks != 0 {
		t.Fatalf("after the resync b sees %+v, want the prefill done", u)
	}
	if st := b.Stats(); st.Repaired != 2 || st.Received != 2 {
		t.Fatalf("b's stats = %+v, want 2 repaired of 2 received", st)
	}

	// A later resync renews the lease; then the done is lost.
	now = now.Add(4 * time.Second)
	a.Resync(l)
	if n := trB.ExpireRemote(now.Add(b.cfg.Lease - time.Second)); n != 0 {
		t.Fatalf("a renewed ticket expired before its lease")
	}
	lost(func() { trA.Done(tk) })
	a.Resync(l) // sends nothing: a holds no ticket
	if trB.Usage("p").Requests != 1 {
		t.Fatalf("a lost done arrived")
	}
	if n := trB.ExpireRemote(now.Add(b.cfg.Lease + time.Second)); n != 1 || trB.Usage("p").Requests != 0 {
		t.Fatalf("a ticket whose done was lost outlived its lease (%d expired)", n)
	}
	if st := a.Stats(); st.Resent != 3 || st.Sent != 3 {
		t.Fatalf("a's stats = %+v, want 3 changes sent and 3 resent", st)
	}
}

// TestSharerLeaseOnlyForResyncingPeers checks that a peer which never
// resyncs (an older version) keeps the TTL, and that one which does has
// its tickets, even those started before its first resync, on the lease.
func TestSharerLeaseOnlyForResyncingPeers(t *testing.T) {
	now := time.Unix(100, 0)
	tr, s := sharerAt(t, now)
	start := func(from string, id uint64) {
		body := EncodeChanges(1, []load.Change{{Op: load.OpStart, ID: id, Pod: "p", Blocks: 3}}, 1100)[0]
		s.OnPeerMessage(gossip.PeerMessage{From: from, Kind: KindLoad, Body: body})
	}
	start("old", 1)
	start("new", 1)
	body := EncodeChanges(1, []load.Change{{Op: load.OpLive, ID: 1, Pod: "p", Blocks: 3}}, 1100)[0]
	s.OnPeerMessage(gossip.PeerMessage{From: "new", Kind: KindLoad, Body: body})
	start("new", 2)
	if n := tr.ExpireRemote(now.Add(s.cfg.Lease + time.Second)); n != 2 || tr.Usage("p").Requests != 1 {
		t.Fatalf("after the lease %d expired and p has %+v; want the resyncing peer's 2 gone, the old peer's kept", n, tr.Usage("p"))
	}
	if n := tr.ExpireRemote(now.Add(s.cfg.TTL + time.Second)); n != 1 {
		t.Fatalf("the old peer's ticket outlived the TTL")
	}
}

// TestSharerResyncsWhatCameBeforeThePool checks that the requests routed
// before the sharer had a sender (the cell had not joined its pool yet)
// are resynced once it has one, and that one which ended meanwhile is not.
func TestSharerResyncsWhatCameBeforeThePool(t *testing.T) {
	trA, trB := load.NewTracker(), load.NewTracker()
	a, b := newSharer(t, trA, nil), newSharer(t, trB, nil)
	l := &loopback{from: "a", peers: []*Sharer{b}}
	trA.Start("p", 3, 1, "")
	ended := trA.Start("q", 5, 0, "")
	attach(a, l)
	a.Flush(l)
	if st := a.Stats(); st.Sent != 0 {
		t.Fatalf("changes from before the pool were queued: %+v", st)
	}
	a.detach()
	trA.Done(ended)
	attach(a, l)
	a.Resync(l)
	if u := trB.Usage("p"); u.Requests != 1 || u.Blocks != 3 || u.PrefillBlocks != 1 {
		t.Fatalf("b's view of p = %+v, want a's request from before the pool", u)
	}
	if u := trB.Usage("q"); u.Requests != 0 {
		t.Fatalf("b's view of q = %+v, want the ended request absent", u)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, mut := range []func(*Config){
		func(c *Config) { c.FlushInterval = 0 },
		func(c *Config) { c.TTL = 0 },
		func(c *Config) { c.MaxPending = 0 },
		func(c *Config) { c.ResyncInterval = 0 },
		func(c *Config) { c.Lease = 2 * c.ResyncInterval },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("the default config: %v", err)
	}
}

// BenchmarkTrackerWithSharer is load's BenchmarkTrackerLifecycle with the
// sharer observing: the cost a replica adds to one request's bookkeeping
// (the ticket state kept for resyncs, the change queued), with and
// without a pool. The queue is flushed every 64 requests, as a busy
// replica's 20ms would.
func BenchmarkTrackerWithSharer(b *testing.B) {
	for _, pooled := range []bool{false, true} {
		b.Run(map[bool]string{false: "alone", true: "pooled"}[pooled], func(b *testing.B) {
			tr := load.NewTracker()
			s, err := New(DefaultConfig(), tr, nil)
			if err != nil {
				b.Fatal(err)
			}
			c := &counting{}
			if pooled {
				s.send.Store(&senderBox{c})
			}
			pods := make([]string, 256)
			for i := range pods {
				pods[i] = fmt.Sprintf("pod-%03d", i)
				tr.Start(pods[i], 10, 0, "")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tk := tr.Start(pods[i&255], 64, 48, "chat")
				tr.FirstToken(tk)
				tr.Done(tk)
				if i&63 == 63 {
					s.Flush(c)
				}
			}
		})
	}
}
