package gossip

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func TestParseKeyring(t *testing.T) {
	k16, k32 := bytes.Repeat([]byte{1}, 16), bytes.Repeat([]byte{2}, 32)
	tests := []struct {
		name, file string
		want       [][]byte
		wantErr    string
	}{
		{"one key", b64(k32) + "\n", [][]byte{k32}, ""},
		{"primary first, comments, blanks, spaces", "# rotation step 1\n\n  " + b64(k16) + "  \n" + b64(k32), [][]byte{k16, k32}, ""},
		{"empty", "\n# nothing\n", nil, "no key"},
		{"not base64", "!!!", nil, "line 1: not base64"},
		{"wrong size", b64([]byte("short")), nil, "5 bytes"},
		{"twice", b64(k16) + "\n" + b64(k16), nil, "line 2: the key is listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseKeyring([]byte(tt.file))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want an error about %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %d keys, %v; want %d", len(got), err, len(tt.want))
			}
			for i := range got {
				if !bytes.Equal(got[i], tt.want[i]) {
					t.Errorf("key %d differs", i)
				}
			}
		})
	}
}

// FuzzParseKeyring checks that the parser never panics and that what it
// accepts is a non-empty list of distinct AES keys.
func FuzzParseKeyring(f *testing.F) {
	f.Add([]byte(b64(bytes.Repeat([]byte{1}, 16)) + "\n# c\n" + b64(bytes.Repeat([]byte{2}, 24))))
	f.Add([]byte("\n\n"))
	f.Add([]byte("===="))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := ParseKeyring(data)
		if err != nil {
			return
		}
		if len(keys) == 0 || len(keys) > MaxKeyringKeys {
			t.Fatalf("%d keys accepted", len(keys))
		}
		for i, k := range keys {
			if l := len(k); l != 16 && l != 24 && l != 32 {
				t.Fatalf("key %d of %d bytes", i, l)
			}
			for _, p := range keys[:i] {
				if bytes.Equal(p, k) {
					t.Fatal("a duplicate key accepted")
				}
			}
		}
	})
}

func TestSetKeyringNeedsEncryption(t *testing.T) {
	n := startNode(t, fastConfig("g1", RoleGlobal, ""))
	if err := n.SetKeyring([][]byte{bytes.Repeat([]byte{1}, 16)}); err != ErrNotEncrypted {
		t.Errorf("got %v, want ErrNotEncrypted", err)
	}
}

// rotationConfig is fastConfig with failure detection that a loaded
// machine running the race detector does not trip by itself, and the key.
func rotationConfig(name string, role Role, cell string, key []byte) Config {
	c := fastConfig(name, role, cell)
	c.ProbeInterval, c.ProbeTimeout, c.SuspicionMult = 500*time.Millisecond, 250*time.Millisecond, 3
	c.SecretKey = key
	return c
}

// TestKeyRotationUnderTraffic rotates the pool's key in the three steps of
// ParseKeyring (install, switch, remove), node by node, while two cells
// publish a summary generation every 50 ms, and checks that no member
// leaves or is declared dead, that summaries keep arriving after each
// node's change, and that at the end only the new key opens the pool.
func TestKeyRotationUnderTraffic(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 32)
	withKey := func(c Config) Config { return rotationConfig(c.NodeName, c.Role, c.CellID, oldKey) }
	rec := &recorder{}
	gcfg := withKey(fastConfig("g1", RoleGlobal, ""))
	g, err := Start(gcfg, rec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Kill() })
	c1 := startNode(t, withKey(fastConfig("c1", RoleCell, "cell-1")), g.Addr())
	c2 := startNode(t, withKey(fastConfig("c2", RoleCell, "cell-2")), g.Addr())
	nodes := []*Node{g, c1, c2}
	eventually(t, waitFor, "three alive members", func() bool { return aliveCount(g) == 3 && aliveCount(c1) == 3 && aliveCount(c2) == 3 })

	// Traffic: each cell publishes a new generation every 50 ms.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var dead atomic.Bool
	for i, c := range []*Node{c1, c2} {
		wg.Add(1)
		go func(i int, c *Node) {
			defer wg.Done()
			b, _ := NewBuilder(DefaultSummaryConfig())
			r := rand.New(rand.NewPCG(uint64(i), 1))
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				for range 16 {
					b.AddChain(randChain(r, 16))
				}
				c.Publish(b.Build(), Load{Pods: 1})
				for _, n := range nodes {
					for _, m := range n.Members() {
						if m.State == StateDead {
							dead.Store(true)
						}
					}
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}(i, c)
	}
	defer func() { close(stop); wg.Wait() }()

	// flowing waits until the global holds a newer generation of both
	// cells than it held when called.
	flowing := func(what string) {
		t.Helper()
		before := map[string]uint64{}
		for _, e := range g.Table().Snapshot() {
			before[e.Cell] = e.Gen
		}
		eventually(t, waitFor, "summaries flowing "+what, func() bool {
			n := 0
			for _, e := range g.Table().Snapshot() {
				if e.Gen > before[e.Cell] {
					n++
				}
			}
			return n == 2
		})
	}
	flowing("before the rotation")
	steps := []struct {
		name string
		keys [][]byte
	}{
		{"install", [][]byte{oldKey, newKey}},
		{"switch", [][]byte{newKey, oldKey}},
		{"remove", [][]byte{newKey}},
	}
	for _, s := range steps {
		for _, n := range nodes {
			if err := n.SetKeyring(s.keys); err != nil {
				t.Fatalf("%s on %s: %v", s.name, n.Name(), err)
			}
			flowing(s.name + " on " + n.Name())
		}
		for _, n := range nodes {
			if kr := n.Keyring(); len(kr) != len(s.keys) || !bytes.Equal(kr[0], s.keys[0]) {
				t.Fatalf("%s: %s holds %d keys, want %d with the right primary", s.name, n.Name(), len(kr), len(s.keys))
			}
		}
	}
	if dead.Load() {
		t.Error("a member was seen dead during the rotation")
	}
	for _, n := range []string{"c1", "c2"} {
		if rec.has(EventLeave, n) {
			t.Errorf("%s left the pool during the rotation", n)
		}
	}
	// Only the new key opens the pool now.
	for _, tc := range []struct {
		name string
		key  []byte
		ok   bool
	}{{"old key", oldKey, false}, {"new key", newKey, true}} {
		cfg := fastConfig("late-"+tc.name[:3], RoleGlobal, "")
		cfg.SecretKey, cfg.Seeds = tc.key, []string{g.Addr()}
		n, err := Start(cfg, nil)
		if (err == nil) != tc.ok {
			t.Errorf("a node with the %s: joined %v, want %v (%v)", tc.name, err == nil, tc.ok, err)
		}
		if n != nil {
			n.Kill()
		}
	}
}

// TestKeyRotationOutOfOrder is the control of TestKeyRotationUnderTraffic:
// switching one node to a key another has not installed splits the pool,
// which the rotation test would see.
func TestKeyRotationOutOfOrder(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{7}, 32), bytes.Repeat([]byte{9}, 32)
	g := startNode(t, rotationConfig("g1", RoleGlobal, "", oldKey))
	startNode(t, rotationConfig("c1", RoleCell, "cell-1", oldKey), g.Addr())
	eventually(t, waitFor, "two alive members", func() bool { return aliveCount(g) == 2 })
	if err := g.SetKeyring([][]byte{newKey}); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "the cell dropping out", func() bool { return memberState(g, "c1") != StateAlive })
}
