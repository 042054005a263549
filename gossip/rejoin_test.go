package gossip

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// restartAt starts a fresh node named name on addr (host:port), as a
// restarted process would, retrying while the old one's sockets linger.
func restartAt(t *testing.T, cfg Config, addr string) *Node {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BindAddr = host
	if cfg.BindPort, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	var n *Node
	eventually(t, waitFor, fmt.Sprintf("%s restarts on %s", cfg.NodeName, addr), func() bool {
		n, err = Start(cfg, nil)
		return err == nil
	})
	t.Cleanup(func() { n.Kill() })
	return n
}

// TestRejoinRestartedSeedWithoutSeeds: a globald (A, started without
// seeds) is killed; its cell (B, seeded with A) declares it dead; a new A
// on the same address, again without seeds, is alone until B's rejoin loop
// joins it, and then both see each other alive. Before the rejoin loop, B
// used its seeds only at start and A stayed alone for good.
func TestRejoinRestartedSeedWithoutSeeds(t *testing.T) {
	acfg := fastConfig("global-a", RoleGlobal, "")
	a := startNode(t, acfg)
	b := startNode(t, fastConfig("cell-b", RoleCell, "cell-b"), a.Addr())
	eventually(t, waitFor, "A and B see each other", func() bool { return aliveCount(a) == 2 && aliveCount(b) == 2 })
	if st := a.PoolStatus(); st.Alone || st.Members != 2 || st.Degraded() != "" {
		t.Fatalf("A in a pool of two: %+v (%q)", st, st.Degraded())
	}

	addr := a.Addr()
	a.Kill()
	eventually(t, waitFor, "B declares A dead", func() bool { return memberState(b, "global-a") == StateDead })
	eventually(t, waitFor, "B says it is alone and misses its seed", func() bool {
		st := b.PoolStatus()
		return st.Alone && len(st.MissingSeeds) == 1 && st.MissingSeeds[0] == addr
	})
	if why := b.PoolStatus().Degraded(); why == "" {
		t.Fatal("B alone reports no degradation")
	}

	start := time.Now()
	a2 := restartAt(t, acfg, addr) // no seeds
	// Bound: a few rejoin rounds (200 ms, backing off to 1 s) plus the
	// refutation of A's death; generous for -race on a loaded machine.
	eventually(t, 20*time.Second, "B rejoins the restarted A", func() bool {
		return memberState(a2, "cell-b") == StateAlive && memberState(b, "global-a") == StateAlive
	})
	t.Logf("rejoined %v after the restart", time.Since(start).Round(time.Millisecond))
	eventually(t, waitFor, "neither is alone", func() bool {
		sa, sb := a2.PoolStatus(), b.PoolStatus()
		return !sa.Alone && !sb.Alone && len(sb.MissingSeeds) == 0
	})
	if b.PoolStatus().Rejoins == 0 {
		t.Fatal("B's rejoin loop counted no rejoin")
	}
}

// TestRejoinRestartedCellByMemory: the reverse. A cell (B) joined a
// globald (A) without A being its seed's only path back: B is killed, A
// declares it dead, and a new B on the same address starts with no seeds.
// A remembers B's last address and its rejoin loop brings B back.
func TestRejoinRestartedCellByMemory(t *testing.T) {
	a := startNode(t, fastConfig("global-a", RoleGlobal, ""))
	bcfg := fastConfig("cell-b", RoleCell, "cell-b")
	b := startNode(t, bcfg, a.Addr())
	eventually(t, waitFor, "A and B see each other", func() bool { return aliveCount(a) == 2 && aliveCount(b) == 2 })

	addr := b.Addr()
	b.Kill()
	eventually(t, waitFor, "A declares B dead", func() bool { return memberState(a, "cell-b") == StateDead })
	eventually(t, waitFor, "A is alone and remembers B", func() bool {
		st := a.PoolStatus()
		return st.Alone && st.Remembered == 1
	})

	b2 := restartAt(t, bcfg, addr) // no seeds
	eventually(t, 20*time.Second, "A rejoins the restarted B", func() bool {
		return memberState(a, "cell-b") == StateAlive && memberState(b2, "global-a") == StateAlive
	})
	eventually(t, waitFor, "A forgets B once it is back", func() bool { return a.PoolStatus().Remembered == 0 })
	eventually(t, waitFor, "B's cell is back in A's table", func() bool { _, ok := a.Table().Get("cell-b"); return ok })
}

// TestJoinInBackground: a node whose seed is not up yet starts anyway and
// joins the seed once it is.
func TestJoinInBackground(t *testing.T) {
	// A free port for the seed that comes up later.
	probe := startNode(t, fastConfig("probe", RoleGlobal, ""))
	seedAddr := probe.Addr()
	probe.Kill()

	bcfg := fastConfig("cell-b", RoleCell, "cell-b")
	bcfg.JoinInBackground = true
	b := startNode(t, bcfg, seedAddr)
	eventually(t, waitFor, "B reports its failed join", func() bool {
		st := b.PoolStatus()
		return st.Alone && st.LastError != "" && len(st.MissingSeeds) == 1
	})
	a := restartAt(t, fastConfig("global-a", RoleGlobal, ""), seedAddr)
	eventually(t, waitFor, "B joins the late seed", func() bool { return aliveCount(a) == 2 && aliveCount(b) == 2 })
}

// TestRememberedMembersBounded: the departed members kept for rejoining
// are at most RememberMembers, the oldest forgotten first, and expire
// after RememberFor; this node and live members are never targets.
func TestRememberedMembersBounded(t *testing.T) {
	cfg := fastConfig("self", RoleGlobal, "")
	cfg.RememberMembers = 3
	cfg.RememberFor = time.Minute
	cfg.RejoinInterval = time.Hour // the loop stays out of the way
	cfg.RejoinMaxInterval = time.Hour
	n := startNode(t, cfg)
	t0 := time.Now()
	n.mu.Lock()
	for i := range 5 {
		n.rememberLocked(Member{Name: fmt.Sprint("m", i), Addr: fmt.Sprintf("127.0.0.1:%d", 1000+i)}, t0.Add(time.Duration(i)*time.Second))
	}
	n.rememberLocked(Member{Name: "self", Addr: n.Addr()}, t0)
	n.mu.Unlock()
	got := n.rejoinTargets(t0.Add(5 * time.Second))
	want := map[string]bool{"127.0.0.1:1002": true, "127.0.0.1:1003": true, "127.0.0.1:1004": true}
	if len(got) != len(want) {
		t.Fatalf("targets %v, want the three newest %v", got, want)
	}
	for _, a := range got {
		if !want[a] {
			t.Fatalf("targets %v, want the three newest %v", got, want)
		}
	}
	// m2 was remembered at t0+2s: at t0+2s+RememberFor+1s it has expired.
	got = n.rejoinTargets(t0.Add(2*time.Second + time.Minute + time.Second))
	if len(got) != 2 || n.PoolStatus().Remembered != 2 {
		t.Fatalf("after m2 expired: targets %v, remembered %d", got, n.PoolStatus().Remembered)
	}
}

// TestRejoinConfigValidated: the rejoin settings are checked by name.
func TestRejoinConfigValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"RejoinInterval", func(c *Config) { c.RejoinInterval = 0 }},
		{"RejoinMaxInterval", func(c *Config) { c.RejoinMaxInterval = c.RejoinInterval - 1 }},
		{"RememberMembers", func(c *Config) { c.RememberMembers = -1 }},
		{"RememberFor", func(c *Config) { c.RememberFor = -time.Second }},
	} {
		c := fastConfig("n", RoleGlobal, "")
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.name) {
			t.Fatalf("%s: got %v, want an error naming it", tc.name, err)
		}
	}
}
