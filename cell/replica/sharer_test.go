package replica

import (
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
	tr := load.NewTracker()
	s := newSharer(t, tr, nil)
	now := time.Unix(100, 0)
	s.now = func() time.Time { return now }
	body := EncodeChanges(1, []load.Change{{Op: load.OpStart, ID: 1, Pod: "p", Blocks: 3}}, 1100)[0]
	s.OnPeerMessage(gossip.PeerMessage{From: "peer", Kind: KindLoad, Body: body})
	if tr.ExpireRemote(now.Add(s.cfg.TTL-time.Second)) != 0 || tr.Usage("p").Requests != 1 {
		t.Fatalf("the ticket expired early")
	}
	if tr.ExpireRemote(now.Add(s.cfg.TTL+time.Second)) != 1 || tr.Usage("p").Requests != 0 {
		t.Fatalf("the ticket did not expire after the TTL")
	}
}
