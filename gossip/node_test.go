package gossip

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// waitFor is the deadline for anything that travels through gossip: generous,
// since tests run with -race on a loaded two-core machine.
const waitFor = 30 * time.Second

// fastConfig returns a loopback config with fast gossip and failure
// detection, on a free port.
func fastConfig(name string, role Role, cell string) Config {
	c := DefaultConfig()
	c.NodeName = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.GossipInterval = 20 * time.Millisecond
	c.ProbeInterval = 200 * time.Millisecond
	c.ProbeTimeout = 100 * time.Millisecond
	c.SuspicionMult = 2
	c.PushPullInterval = time.Second
	c.TCPTimeout = 3 * time.Second
	c.ResyncInterval = 100 * time.Millisecond
	c.LeaveTimeout = 3 * time.Second
	c.RejoinInterval = 200 * time.Millisecond
	c.RejoinMaxInterval = time.Second
	c.Role = role
	c.CellID = cell
	c.HTTPAddr = "127.0.0.1:18080"
	c.GRPCAddr = "127.0.0.1:19090"
	return c
}

// startNode starts a node joined to seeds and kills it at the end of the
// test.
func startNode(t *testing.T, cfg Config, seeds ...string) *Node {
	t.Helper()
	cfg.Seeds = seeds
	n, err := Start(cfg, nil)
	if err != nil {
		t.Fatalf("Start(%s): %v", cfg.NodeName, err)
	}
	t.Cleanup(func() { n.Kill() })
	return n
}

// memberState returns the state of name in n's view, or -1 when unknown.
func memberState(n *Node, name string) State {
	for _, m := range n.Members() {
		if m.Name == name {
			return m.State
		}
	}
	return 255
}

func aliveCount(n *Node) int {
	k := 0
	for _, m := range n.Members() {
		if m.State == StateAlive {
			k++
		}
	}
	return k
}

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []Event
}

func (r *recorder) OnChange(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) has(kind EventKind, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		if e.Kind == kind && e.Member.Name == name {
			return true
		}
	}
	return false
}

func TestPoolMembershipAndMetadata(t *testing.T) {
	rec := &recorder{}
	g1cfg := fastConfig("g1", RoleGlobal, "")
	g1, err := Start(g1cfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g1.Kill() })
	seed := g1.Addr()
	nodes := []*Node{
		g1,
		startNode(t, fastConfig("c1", RoleCell, "cell-1"), seed),
		startNode(t, fastConfig("c2", RoleCell, "cell-2"), seed),
		startNode(t, fastConfig("g2", RoleGlobal, ""), seed),
	}
	for _, n := range nodes {
		eventually(t, waitFor, n.Name()+" sees 4 alive members", func() bool { return aliveCount(n) == 4 })
	}
	want := map[string]Member{}
	for _, n := range nodes {
		want[n.Name()] = n.LocalMember()
	}
	for _, n := range nodes {
		for _, m := range n.Members() {
			if w := want[m.Name]; m != w {
				t.Fatalf("%s sees %+v, want %+v", n.Name(), m, w)
			}
		}
	}
	for _, name := range []string{"c1", "c2", "g2"} {
		eventually(t, waitFor, "g1's observer sees "+name+" join", func() bool { return rec.has(EventJoin, name) })
	}
	// Cells appear in the tables of the others (not in their own).
	eventually(t, waitFor, "g2's table holds both cells", func() bool { return g2Len(nodes[3]) == 2 })
	if _, ok := nodes[1].Table().Get("cell-1"); ok {
		t.Fatalf("c1's table holds c1 itself")
	}
	if e, ok := nodes[1].Table().Get("cell-2"); !ok || e.Member.HTTPAddr != "127.0.0.1:18080" {
		t.Fatalf("c1's table entry for cell-2 = %+v, %v; want it with its HTTP address", e, ok)
	}
}

func g2Len(n *Node) int { return n.Table().Len() }

// publishChains builds a summary of the given chain prefixes and publishes it.
func publishGen(t *testing.T, c *Node, b *Builder, r *rand.Rand, pool *[]uint64Chain, load Load) *Summary {
	t.Helper()
	for range 30 {
		*pool = append(*pool, (randChain(r, 1+r.IntN(40))))
	}
	if len(*pool) > 200 {
		*pool = (*pool)[len(*pool)-200:]
	}
	for _, ch := range *pool {
		b.AddChain(ch)
	}
	s := b.Build()
	if _, err := c.Publish(s, load); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return s
}

func TestSummaryConvergesOnGlobal(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	c := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	g2 := startNode(t, fastConfig("g2", RoleGlobal, ""), g.Addr())
	eventually(t, waitFor, "g1 sees cell-1", func() bool { _, ok := g.Table().Get("cell-1"); return ok })

	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 4096
	b := mustBuilder(t, cfg)
	r := rand.New(rand.NewPCG(42, 42))
	var pool []uint64Chain
	for gen := uint64(1); gen <= 6; gen++ {
		load := Load{ActiveRequests: int(gen), ActiveBlocks: 100 * int(gen), FreeBlocks: 1000, Pods: 4}
		s := publishGen(t, c, b, r, &pool, load)
		for _, n := range []*Node{g, g2} {
			eventually(t, waitFor, n.Name()+" holds generation", func() bool {
				e, ok := n.Table().Get("cell-1")
				return ok && e.Gen == gen && e.Summary.Equal(s) && e.Load == load
			})
		}
	}
	e, _ := g.Table().Get("cell-1")
	if e.Member.Name != "c1" || e.Behind() || e.UpdatedAt.IsZero() {
		t.Fatalf("entry = %+v, want member c1, not behind, with an update time", e)
	}
	st := g.Stats()
	if st.DeltasApplied == 0 {
		t.Fatalf("stats %+v: no delta applied, want later generations to travel as deltas", st)
	}
	if cs := c.Stats(); cs.FetchesServed == 0 {
		t.Fatalf("cell stats %+v: no fetch served", cs)
	}
	// A load-only update reaches the global without a new generation.
	load := Load{ActiveRequests: 99, Pods: 4}
	if err := c.SetLoad(load); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "load update", func() bool {
		e, _ := g.Table().Get("cell-1")
		return e.Load == load && e.Gen == 6
	})
	if _, err := g.Publish(e.Summary, load); !errors.Is(err, ErrNotCell) {
		t.Fatalf("Publish on a global = %v, want ErrNotCell", err)
	}
}

func TestNewCellJoinsLaterAndAppears(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	c1 := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	r := rand.New(rand.NewPCG(7, 7))
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 1024
	b1 := mustBuilder(t, cfg)
	var pool1 []uint64Chain
	s1 := publishGen(t, c1, b1, r, &pool1, Load{Pods: 1})
	eventually(t, waitFor, "cell-1 summary on g1", func() bool {
		e, ok := g.Table().Get("cell-1")
		return ok && e.Summary.Equal(s1)
	})
	// The new cell publishes before joining: the join's push/pull and the
	// fetch on join deliver its summary without any new header.
	c2cfg := fastConfig("c2", RoleCell, "cell-2")
	c2 := startNode(t, c2cfg)
	b2 := mustBuilder(t, cfg)
	var pool2 []uint64Chain
	s2 := publishGen(t, c2, b2, r, &pool2, Load{Pods: 2})
	if _, err := c2.Join([]string{c1.Addr()}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "cell-2 summary on g1", func() bool {
		e, ok := g.Table().Get("cell-2")
		return ok && e.Summary.Equal(s2) && e.Load.Pods == 2
	})
	eventually(t, waitFor, "cell-1 summary on c2", func() bool {
		e, ok := c2.Table().Get("cell-1")
		return ok && e.Summary.Equal(s1)
	})
}

func TestKilledCellIsRemoved(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	g2 := startNode(t, fastConfig("g2", RoleGlobal, ""), g.Addr())
	c := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	b := mustBuilder(t, DefaultSummaryConfig())
	var pool []uint64Chain
	publishGen(t, c, b, rand.New(rand.NewPCG(1, 2)), &pool, Load{Pods: 3})
	eventually(t, waitFor, "cell-1 summary on g1", func() bool {
		e, ok := g.Table().Get("cell-1")
		return ok && e.Summary != nil
	})
	eventually(t, waitFor, "g2 sees c1", func() bool { return memberState(g2, "c1") == StateAlive })
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, n := range []*Node{g, g2} {
		eventually(t, waitFor, n.Name()+" marks c1 dead", func() bool { return memberState(n, "c1") == StateDead })
		eventually(t, waitFor, n.Name()+" drops cell-1", func() bool { _, ok := n.Table().Get("cell-1"); return !ok })
	}
	t.Logf("failure detected and cell removed in %v", time.Since(start))
}

func TestShutdownLeavesCleanly(t *testing.T) {
	rec := &recorder{}
	// g1 probes slowly, so only a clean leave (not failure detection,
	// which would take over 20 s here) can remove c1 within the deadline.
	gcfg := fastConfig("g1", RoleGlobal, "")
	gcfg.ProbeInterval, gcfg.ProbeTimeout, gcfg.SuspicionMult = 10*time.Second, time.Second, 4
	g, err := Start(gcfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Kill() })
	c := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	eventually(t, waitFor, "g1 sees cell-1", func() bool { _, ok := g.Table().Get("cell-1"); return ok })
	if err := c.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	eventually(t, 8*time.Second, "c1 gone", func() bool { return memberState(g, "c1") == StateDead })
	eventually(t, waitFor, "leave event", func() bool { return rec.has(EventLeave, "c1") })
	if _, ok := g.Table().Get("cell-1"); ok {
		t.Fatalf("cell-1 still in the table after its node left")
	}
	if err := c.Shutdown(); err != nil {
		t.Fatalf("second Shutdown = %v, want nil", err)
	}
	if _, err := c.Join([]string{g.Addr()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Join after Shutdown = %v, want ErrClosed", err)
	}
}

func TestEncryptedPool(t *testing.T) {
	key := []byte("0123456789abcdef0123456789abcdef")
	withKey := func(cfg Config, k []byte) Config { cfg.SecretKey = k; return cfg }
	g := startNode(t, withKey(fastConfig("g1", RoleGlobal, ""), key))
	c := startNode(t, withKey(fastConfig("c1", RoleCell, "cell-1"), key), g.Addr())
	b := mustBuilder(t, DefaultSummaryConfig())
	var pool []uint64Chain
	s := publishGen(t, c, b, rand.New(rand.NewPCG(3, 4)), &pool, Load{Pods: 1})
	eventually(t, waitFor, "summary over the encrypted pool", func() bool {
		e, ok := g.Table().Get("cell-1")
		return ok && e.Summary.Equal(s)
	})
	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"wrong key", []byte("fedcba9876543210")},
		{"no key", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := withKey(fastConfig("intruder", RoleGlobal, ""), tc.key)
			cfg.Seeds = []string{g.Addr()}
			n, err := Start(cfg, nil)
			if err == nil {
				n.Kill()
				t.Fatalf("Start with %s joined the encrypted pool, want an error", tc.name)
			}
		})
	}
	if got := memberState(g, "intruder"); got != 255 {
		t.Fatalf("g1 knows the intruder as %v, want unknown", got)
	}
}

// TestLargeSummaryConverges sends a summary of 250k sampled hashes (a
// 300 KB filter, far over a UDP packet) and then a 1% churn of it, and
// checks that the global holds both exactly; it logs how long each took.
func TestLargeSummaryConverges(t *testing.T) {
	g := startNode(t, fastConfig("g1", RoleGlobal, ""))
	c := startNode(t, fastConfig("c1", RoleCell, "cell-1"), g.Addr())
	eventually(t, waitFor, "g1 sees cell-1", func() bool { _, ok := g.Table().Get("cell-1"); return ok })
	hashes := randChain(newRand(5), 250_000)
	b := mustBuilder(t, DefaultSummaryConfig())
	for gen, skip := range []int{0, 100} {
		for i, h := range hashes {
			if skip > 0 && i%skip == 0 {
				continue
			}
			b.Add(h, 0)
		}
		s := b.Build()
		start := time.Now()
		if _, err := c.Publish(s, Load{Pods: 8}); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitFor, "large summary on g1", func() bool {
			e, _ := g.Table().Get("cell-1")
			return e.Gen == uint64(gen+1) && e.Summary.Equal(s)
		})
		t.Logf("generation %d (%d-byte filter) converged in %v; stats %+v", gen+1, s.SizeBytes(), time.Since(start), g.Stats())
	}
	if g.Stats().DeltasApplied == 0 {
		t.Fatalf("the 1%% churn did not travel as a delta: %+v", g.Stats())
	}
}
