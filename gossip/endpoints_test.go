package gossip

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// TestTableEndpointSets checks that the replicas of one cell are endpoints of
// one entry, each with its own generations, that the entry holds the summary
// updated last, and that a replica's death only shrinks the set.
func TestTableEndpointSets(t *testing.T) {
	now := time.Unix(1000, 0)
	tab := NewTable(func() time.Time { return now })
	s1, s2 := sampleSummary(t, 1, 5), sampleSummary(t, 2, 5)
	if !tab.SetMember(Member{Name: "cell/a/r1", Role: RoleCell, CellID: "a", HTTPAddr: "h1"}) {
		t.Fatalf("SetMember(r1) = false, want true (new endpoint)")
	}
	if !tab.SetMember(Member{Name: "cell/a/r2", Role: RoleCell, CellID: "a", HTTPAddr: "h2"}) {
		t.Fatalf("SetMember(r2) = false, want true (new endpoint)")
	}
	if tab.SetMember(Member{Name: "cell/a/r2", Role: RoleCell, CellID: "a", HTTPAddr: "h2b"}) {
		t.Fatalf("SetMember(r2 again) = true, want false (an update)")
	}
	e, ok := tab.Get("a")
	if !ok || tab.Len() != 1 || len(e.Endpoints) != 2 || e.Endpoints[0].Member.HTTPAddr != "h1" || e.Endpoints[1].Member.HTTPAddr != "h2b" {
		t.Fatalf("entry = %+v, want one cell with endpoints h1, h2b", e)
	}
	// Each replica publishes under its own epoch; neither drops the other's.
	if _, err := tab.ApplyHeader(&Header{Cell: "a", Node: "cell/a/r1", Epoch: 10, Gen: 1, Seq: 1, Load: Load{Pods: 3}, Params: s1.Params()}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Millisecond)
	behind, err := tab.ApplyHeader(&Header{Cell: "a", Node: "cell/a/r2", Epoch: 20, Gen: 1, Seq: 1, Load: Load{Pods: 4}, Params: s2.Params()})
	if err != nil || !behind {
		t.Fatalf("r2's header: behind = %v, err = %v; want true, nil", behind, err)
	}
	if _, err := tab.ApplySnapshot(&Snapshot{Cell: "a", Node: "cell/a/r1", Epoch: 10, Gen: 1, Params: s1.Params(), Elements: s1.Elements(), Bits: s1.Words()}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if _, err := tab.ApplySnapshot(&Snapshot{Cell: "a", Node: "cell/a/r2", Epoch: 20, Gen: 1, Params: s2.Params(), Elements: s2.Elements(), Bits: s2.Words()}); err != nil {
		t.Fatal(err)
	}
	e, _ = tab.Get("a")
	if e.Member.Name != "cell/a/r2" || !e.Summary.Equal(s2) || e.Epoch != 20 || e.Load.Pods != 4 {
		t.Fatalf("entry source %s epoch %d load %+v, want r2's summary (updated last), epoch 20, pods 4", e.Member.Name, e.Epoch, e.Load)
	}
	for _, ep := range e.Endpoints {
		if ep.Gen != 1 || ep.Behind() {
			t.Fatalf("endpoint %s: gen %d behind %v, want 1, false", ep.Member.Name, ep.Gen, ep.Behind())
		}
	}
	// An unknown replica of a known cell is refused.
	if _, err := tab.ApplyHeader(&Header{Cell: "a", Node: "cell/a/r9", Epoch: 1, Seq: 1}); !errors.Is(err, ErrUnknownCell) {
		t.Fatalf("header of an unknown replica: err = %v, want ErrUnknownCell", err)
	}
	// r2 dies: the cell stays, with r1's endpoint and summary.
	if !tab.RemoveMember("cell/a/r2") {
		t.Fatalf("RemoveMember(r2) = false")
	}
	e, ok = tab.Get("a")
	if !ok || len(e.Endpoints) != 1 || e.Member.Name != "cell/a/r1" || !e.Summary.Equal(s1) {
		t.Fatalf("after r2 died: %+v, want cell a with r1's endpoint and summary", e)
	}
	if !tab.RemoveMember("cell/a/r1") || tab.Len() != 0 {
		t.Fatalf("after the last replica died the table holds %d cells, want 0", tab.Len())
	}
}

// TestTableOwnCellReplicasIgnored checks that a cell's table leaves out the
// replicas of its own cell (they are its peers, not another cell).
func TestTableOwnCellReplicasIgnored(t *testing.T) {
	tab := NewTable(nil)
	tab.self = "a"
	tab.SetMember(Member{Name: "cell/a/r2", Role: RoleCell, CellID: "a"})
	tab.SetMember(Member{Name: "cell/b/r1", Role: RoleCell, CellID: "b"})
	if es := tab.Snapshot(); len(es) != 1 || es[0].Cell != "b" {
		t.Fatalf("table = %+v, want only cell b", es)
	}
}

// peerInbox is an Observer that keeps the peer messages it receives.
type peerInbox struct {
	recorder
	mu   sync.Mutex
	msgs []PeerMessage
}

func (p *peerInbox) OnPeerMessage(m PeerMessage) {
	p.mu.Lock()
	p.msgs = append(p.msgs, m)
	p.mu.Unlock()
}

func (p *peerInbox) count(kind uint8) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := 0
	for _, m := range p.msgs {
		if m.Kind == kind {
			k++
		}
	}
	return k
}

// TestReplicasOverGossip runs two replicas of one cell, another cell and a
// global node on loopback: the global table shows the cell with two
// endpoints and a summary, peer messages reach the sibling replica only, and
// a replica's crash shrinks the endpoint set while the cell keeps routing.
func TestReplicasOverGossip(t *testing.T) {
	g := startNode(t, fastConfig("global-1", RoleGlobal, ""))
	inbox1, inbox2, inboxB := &peerInbox{}, &peerInbox{}, &peerInbox{}
	start := func(name, cell string, obs Observer) *Node {
		cfg := fastConfig(name, RoleCell, cell)
		cfg.Seeds = []string{g.Addr()}
		n, err := Start(cfg, obs)
		if err != nil {
			t.Fatalf("Start(%s): %v", name, err)
		}
		t.Cleanup(func() { n.Kill() })
		return n
	}
	r1 := start("cell/a/r1", "a", inbox1)
	r2 := start("cell/a/r2", "a", inbox2)
	b := start("cell/b/r1", "b", inboxB)
	s := sampleSummary(t, 3, 5)
	for _, n := range []*Node{r1, r2, b} {
		if _, err := n.Publish(s, Load{Pods: 2}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, waitFor, "cell a with two endpoints and a summary at the global node", func() bool {
		e, ok := g.Table().Get("a")
		return ok && len(e.Endpoints) == 2 && e.Summary != nil
	})
	eventually(t, waitFor, "r1 to see r2 as its peer", func() bool { return len(r1.Peers()) == 1 })
	if ps := b.Peers(); len(ps) != 0 {
		t.Fatalf("cell b's peers = %+v, want none", ps)
	}
	if _, ok := r1.Table().Get("a"); ok {
		t.Fatalf("r1's table lists its own cell")
	}
	// Best-effort messages can be lost; send until one arrives.
	eventually(t, waitFor, "a best-effort peer message at r2", func() bool {
		if _, err := r1.SendPeers(7, []byte("load"), false); err != nil {
			t.Fatalf("SendPeers: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
		return inbox2.count(7) > 0
	})
	if n, err := r2.SendPeers(8, []byte("drain"), true); n != 1 || err != nil {
		t.Fatalf("reliable SendPeers = %d, %v; want 1, nil", n, err)
	}
	eventually(t, waitFor, "the reliable peer message at r1", func() bool { return inbox1.count(8) == 1 })
	if inboxB.count(7)+inboxB.count(8) != 0 {
		t.Fatalf("cell b received its neighbour's peer messages")
	}
	if _, err := r1.SendPeers(1, make([]byte, MaxPeerBody+1), false); !errors.Is(err, ErrPeerBodyTooLarge) {
		t.Fatalf("oversized best-effort body: err = %v, want ErrPeerBodyTooLarge", err)
	}
	// r2 crashes: the set shrinks to r1, the cell stays with a summary.
	r2.Kill()
	eventually(t, waitFor, "cell a down to one endpoint", func() bool {
		e, ok := g.Table().Get("a")
		return ok && len(e.Endpoints) == 1 && e.Endpoints[0].Member.Name == "cell/a/r1" && e.Summary != nil
	})
}
