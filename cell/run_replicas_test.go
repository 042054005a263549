package cell

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// startReplicas starts two replicas of one cell over the given pods, joined
// in one gossip pool on loopback.
func startReplicas(t *testing.T, pods []*fakePod) (*Cell, *Cell) {
	t.Helper()
	mk := func(id string, seeds []string) *Cell {
		return cellWithPods(t, pods, func(cfg *Config) {
			cfg.CellID = "cell-r"
			cfg.Replica.ID = id
			cfg.Gossip.Bind, cfg.Gossip.Seeds = "127.0.0.1:0", seeds
			cfg.Gossip.ProbeInterval, cfg.Gossip.ProbeTimeout = 200e6, 100e6
		})
	}
	r1 := mk("r1", nil)
	waitFor(t, "r1's gossip address", func() bool { return r1.GossipAddr() != "" })
	r2 := mk("r2", []string{r1.GossipAddr()})
	// Load changes go to the peers known when they are flushed.
	waitFor(t, "the replicas to see each other", func() bool {
		return len(r1.ReplicaPeers()) == 1 && len(r2.ReplicaPeers()) == 1
	})
	return r1, r2
}

// holdRequest sends a streaming request through c to its held pod p1 and
// reads its first token; it returns c's own load of p1 once c counts the
// first token too, and a func that ends the request.
func holdRequest(t *testing.T, c *Cell) (load.Usage, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": promptTokens(3), "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.HTTPAddr()+"/v1/completions", strings.NewReader(string(body)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	end := func() { cancel(); resp.Body.Close() }
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || !strings.Contains(line, "p1-0") {
		end()
		t.Fatalf("first line %q, %v", line, err)
	}
	// The proxy relays the first token before it tells the tracker, so c
	// may still count the prefill for a moment after the client read it.
	waitFor(t, "the request's own prefill done", func() bool { return c.router.tracker.Usage("p1").PrefillBlocks == 0 })
	return c.router.tracker.Usage("p1"), end
}

// TestReplicasShareLoad routes a held streaming request through one
// replica and checks that the other counts it in its load within a bounded
// poll, and drops it when the request ends.
func TestReplicasShareLoad(t *testing.T) {
	p := newFakePod(t, "p1")
	p.hold = true
	r1, r2 := startReplicas(t, []*fakePod{p})
	if got, want := r1.cfg.nodeName(), "cell/cell-r/r1"; got != want {
		t.Fatalf("node name = %q, want %q", got, want)
	}
	local, end := holdRequest(t, r1)
	defer end()
	if local.Requests != 1 || local.Blocks == 0 {
		t.Fatalf("r1's own load = %+v, want one request with blocks", local)
	}
	waitFor(t, "r1's request in r2's load", func() bool {
		u := r2.router.tracker.Usage("p1")
		return u.Requests == 1 && u.Blocks == local.Blocks && u.PrefillBlocks == 0
	})
	end()
	waitFor(t, "the ended request gone from r2's load", func() bool { return r2.router.tracker.Usage("p1").Requests == 0 })
	if st := r2.sharer.Stats(); st.Received < 3 || st.Malformed != 0 {
		t.Fatalf("r2's sharer stats %+v, want start, first token and done received", st)
	}
	if _, metrics := get(t, "http://"+r2.HTTPAddr()+"/metrics"); !strings.Contains(metrics, `cellrouter_replica_load_changes_received_total{cell="cell-r"}`) {
		t.Fatalf("r2's metrics lack the replica counters")
	}
}

// TestLateReplicaLearnsLoad starts a second replica while the first holds
// a request: no change of that request reaches the newcomer, whose view of
// the pod's load the first resync makes right.
func TestLateReplicaLearnsLoad(t *testing.T) {
	p := newFakePod(t, "p1")
	p.hold = true
	mk := func(id string, seeds []string) *Cell {
		return cellWithPods(t, []*fakePod{p}, func(cfg *Config) {
			cfg.CellID, cfg.Replica.ID = "cell-r", id
			cfg.Gossip.Bind, cfg.Gossip.Seeds = "127.0.0.1:0", seeds
			cfg.Gossip.ProbeInterval, cfg.Gossip.ProbeTimeout = 200e6, 100e6
			cfg.Replica.LoadResyncInterval, cfg.Replica.LoadLease = 100e6, time.Second
		})
	}
	r1 := mk("r1", nil)
	waitFor(t, "r1's gossip address", func() bool { return r1.GossipAddr() != "" })
	local, end := holdRequest(t, r1)
	defer end()

	r2 := mk("r2", []string{r1.GossipAddr()})
	waitFor(t, "r1's request in the late replica's load", func() bool {
		u := r2.router.tracker.Usage("p1")
		return u.Requests == 1 && u.Blocks == local.Blocks && u.PrefillBlocks == 0
	})
	if st := r2.sharer.Stats(); st.Repaired != 1 {
		t.Fatalf("r2's sharer stats %+v, want the request started by a resync", st)
	}
	end()
	waitFor(t, "the ended request gone from r2's load", func() bool { return r2.router.tracker.Usage("p1").Requests == 0 })
	if _, metrics := get(t, "http://"+r2.HTTPAddr()+"/metrics"); !strings.Contains(metrics, `cellrouter_replica_requests_repaired_total{cell="cell-r"} 1`) {
		t.Fatalf("r2's metrics lack the repaired request")
	}
}

// TestReplicasShareDrain drains a pod at one replica and undrains it at the
// other: both see both.
func TestReplicasShareDrain(t *testing.T) {
	p := newFakePod(t, "p1")
	r1, r2 := startReplicas(t, []*fakePod{p})
	if _, err := r1.state.DrainPod(context.Background(), &cellv1.DrainPodRequest{Id: "p1"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drain at r2", func() bool { return r2.state.Draining("p1") })
	if _, err := r2.state.DrainPod(context.Background(), &cellv1.DrainPodRequest{Id: "p1", Cancel: true}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the undrain at r1", func() bool { return !r1.state.Draining("p1") })
}

// TestReplicaConfig checks the replica identity: the gossip node name, the
// JetStream durable derived per replica (unless set), and the validation.
func TestReplicaConfig(t *testing.T) {
	cfg := DefaultConfig()
	cfg.CellID, cfg.Replica.ID = "eu.west", "pod/7"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "replica.id") {
		t.Fatalf("Validate with replica.id %q = %v, want a replica.id error", cfg.Replica.ID, err)
	}
	cfg.Replica.ID = sanitizeReplicaID("pod/7")
	if cfg.Replica.ID != "pod-7" {
		t.Fatalf("sanitizeReplicaID = %q, want pod-7", cfg.Replica.ID)
	}
	if got, want := cfg.nodeName(), "cell/eu.west/pod-7"; got != want {
		t.Fatalf("nodeName = %q, want %q", got, want)
	}
	if got, want := cfg.durableName(), "celld-eu_west-pod-7"; got != want {
		t.Fatalf("derived durable = %q, want %q", got, want)
	}
	cfg.NATS.URL = "nats://127.0.0.1:4222"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate with a derived durable: %v", err)
	}
	cfg.NATS.Durable = "shared durable"
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "unique per replica") {
		t.Fatalf("Validate with a bad durable = %v, want an error that says durables are per replica", err)
	}
	cfg.NATS.Durable = "mine"
	if got := cfg.durableName(); got != "mine" {
		t.Fatalf("explicit durable = %q, want mine", got)
	}
	cfg.Replica.LoadTTL = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "replica.load_ttl") {
		t.Fatalf("Validate with load_ttl 0 = %v", err)
	}
	cfg.Replica = DefaultReplicaConfig()
	cfg.Replica.LoadLease = 2 * cfg.Replica.LoadResyncInterval
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "replica.load_lease") {
		t.Fatalf("Validate with a lease of two resyncs = %v", err)
	}
	cfg.Replica.LoadResyncInterval = 0
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "replica.load_resync_interval") {
		t.Fatalf("Validate with load_resync_interval 0 = %v", err)
	}
}

// TestGossipSeedDownAtStart checks that a cell whose seeds do not answer
// yet (globald starting beside it) keeps running and keeps trying, rather
// than stopping: a restarted replica must not depend on start order.
func TestGossipSeedDownAtStart(t *testing.T) {
	p := newFakePod(t, "p1")
	c := cellWithPods(t, []*fakePod{p}, func(cfg *Config) {
		cfg.Gossip.Bind, cfg.Gossip.Seeds = "127.0.0.1:0", []string{servertest.RefusedAddr(t)}
		cfg.Gossip.SummaryInterval = 50e6
	})
	waitFor(t, "the cell's gossip node", func() bool { return c.GossipAddr() != "" })
	if code, _ := get(t, "http://"+c.HTTPAddr()+"/healthz"); code != 200 {
		t.Fatalf("/healthz = %d with its seed down, want 200", code)
	}
}

// TestDeadReplicaLoadDropped stops a replica while its request is in
// flight: its peer drops the request from its load (through the request's
// done if it got out, else through the replica's leaving the pool) well
// before the 5-minute TTL. TestSharerBookkeeping checks the leave path
// alone.
func TestDeadReplicaLoadDropped(t *testing.T) {
	p := newFakePod(t, "p1")
	p.hold = true
	mk := func(id string, seeds []string) *Config {
		cfg := testConfig()
		cfg.Pods = []PodConfig{{ID: p.id, Address: p.addr(), KVBlocks: 10000}}
		cfg.CellID, cfg.Replica.ID = "cell-d", id
		cfg.Gossip.Bind, cfg.Gossip.Seeds = "127.0.0.1:0", seeds
		cfg.Gossip.ProbeInterval, cfg.Gossip.ProbeTimeout = 200e6, 100e6
		cfg.ShutdownTimeout = 100e6 // the held stream is cut at once
		return &cfg
	}
	r1, err := New(*mk("r1", nil), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	done1 := make(chan error, 1)
	go func() { done1 <- r1.Run(ctx1) }()
	defer func() { stop1(); <-done1 }()
	waitFor(t, "r1's gossip address", func() bool { return r1.GossipAddr() != "" })
	r2 := startCell(t, *mk("r2", []string{r1.GossipAddr()}))
	waitFor(t, "the replicas to see each other", func() bool {
		return len(r1.ReplicaPeers()) == 1 && len(r2.ReplicaPeers()) == 1
	})
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": promptTokens(3), "stream": true})
	resp, err := http.Post("http://"+r1.HTTPAddr()+"/v1/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "r1's request in r2's load", func() bool { return r2.router.tracker.Usage("p1").Requests == 1 })
	stop1()
	waitFor(t, "r1's request dropped from r2's load", func() bool {
		return r2.router.tracker.Usage("p1").Requests == 0 && r2.router.tracker.RemoteTickets() == 0
	})
}
