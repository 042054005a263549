package global

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell"
)

// poolCell is a cell that joined the gossip pool.
type poolCell struct {
	*testCell
	cancel context.CancelFunc
	done   chan error
}

func startPoolCell(t *testing.T, id, seed string, hits *sync.Map) *poolCell {
	t.Helper()
	return startPoolReplica(t, id, "r0", seed, hits)
}

// startPoolReplica starts replica rid of cell id (its own simulated pods:
// the test pods answer with their id, so replicas of a cell need not share
// them for routing tests).
func startPoolReplica(t *testing.T, id, rid, seed string, hits *sync.Map) *poolCell {
	t.Helper()
	return startPoolReplicaWith(t, id, rid, seed, hits, nil)
}

// startPoolReplicaWith is startPoolReplica with mod applied to the cell's
// configuration (nil: none) before it starts.
func startPoolReplicaWith(t *testing.T, id, rid, seed string, hits *sync.Map, mod func(*cell.Config)) *poolCell {
	t.Helper()
	cfg := cell.DefaultConfig()
	cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, cfg.HealthInterval = id, "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.Replica.ID = rid
	for i := 0; i < 2; i++ {
		pid := fmt.Sprintf("%s-pod%d", id, i)
		cfg.Pods = append(cfg.Pods, cell.PodConfig{ID: pid, Address: testPod(t, pid, hits)})
	}
	cfg.Gossip.Bind, cfg.Gossip.Seeds = "127.0.0.1:0", []string{seed}
	cfg.Gossip.SummaryInterval = 100 * time.Millisecond
	cfg.Gossip.ProbeInterval, cfg.Gossip.ProbeTimeout = 100*time.Millisecond, 50*time.Millisecond
	if mod != nil {
		mod(&cfg)
	}
	c, err := cell.New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pc := &poolCell{testCell: &testCell{id: id, c: c}, cancel: cancel, done: make(chan error, 1)}
	go func() { pc.done <- c.Run(ctx) }()
	t.Cleanup(pc.stop)
	return pc
}

func (pc *poolCell) stop() {
	if pc.cancel != nil {
		pc.cancel()
		<-pc.done
		pc.cancel = nil
	}
}

func startDaemon(t *testing.T, seeds ...string) *Daemon {
	t.Helper()
	return startDaemonWith(t, nil, seeds...)
}

// startDaemonWith is startDaemon with mod applied to the configuration
// (nil: none) before it starts.
func startDaemonWith(t *testing.T, mod func(*Config), seeds ...string) *Daemon {
	t.Helper()
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr, cfg.ProbeTimeout = "127.0.0.1:0", "127.0.0.1:0", 5*time.Second
	if mod != nil {
		mod(&cfg)
	}
	pool := DefaultPoolConfig()
	pool.Bind = "127.0.0.1:0"
	pool.ProbeInterval, pool.ProbeTimeout = 100*time.Millisecond, 50*time.Millisecond
	pool.Seeds = seeds
	d, err := NewDaemon(cfg, pool, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

// knows reports whether the global tier has a summary from every cell.
func knows(d *Daemon, ids ...string) bool {
	have := map[string]bool{}
	for _, v := range d.Router().views() {
		if v.Alive && v.Summary != nil {
			have[v.ID] = true
		}
	}
	for _, id := range ids {
		if !have[id] {
			return false
		}
	}
	return true
}

// TestPoolRoutingScalingAndFailover runs the whole two-tier system over
// real sockets on loopback: globald and cells in one gossip pool.
func TestPoolRoutingScalingAndFailover(t *testing.T) {
	hits := &sync.Map{}
	d := startDaemon(t)
	seed := d.GossipAddr()
	a, b := startPoolCell(t, "cell-a", seed, hits), startPoolCell(t, "cell-b", seed, hits)
	toks := tokens(11, 64*16)
	b.hold(t, "cell-b-pod0", toks, 40)
	waitFor(t, "summaries of both cells", func() bool { return knows(d, "cell-a", "cell-b") })
	url := "http://" + d.HTTPAddr() + "/v1/completions"

	// The cell holding the prefix gets the request, once its summary has it.
	waitFor(t, "routing to the holder", func() bool {
		resp, _ := post(t, url, map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
		return resp.Header.Get(CellHeader) == "cell-b"
	})

	// Scale out under load: a third cell joins while requests flow and gets
	// traffic without any reconfiguration.
	var stop atomic.Bool
	var errs atomic.Int64
	served := &sync.Map{}
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				resp, _ := post(t, url, map[string]any{"model": "m", "prompt": tokens(uint32(1000+w*100000+i), 128), "max_tokens": 1})
				if resp.StatusCode != 200 {
					errs.Add(1)
				}
				served.Store(resp.Header.Get(CellHeader), true)
			}
		}(w)
	}
	c := startPoolCell(t, "cell-c", seed, hits)
	waitFor(t, "cell-c in the table", func() bool { return knows(d, "cell-c") })
	waitFor(t, "cell-c to receive traffic", func() bool { _, ok := served.Load("cell-c"); return ok })

	// Kill cell a under load: clients see no error (hand-off retries) and a
	// leaves the candidate set within failure detection.
	a.stop()
	waitFor(t, "cell-a to leave", func() bool {
		for _, v := range d.Router().views() {
			if v.ID == "cell-a" && v.usable() {
				return false
			}
		}
		return true
	})
	stop.Store(true)
	wg.Wait()
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d client errors while a cell joined and one died", n)
	}
	_, metrics := get(t, "http://"+d.HTTPAddr()+"/metrics")
	for _, want := range []string{"cellrouter_global_probes_per_request", "cellrouter_global_summary_age_seconds{cell=\"cell-b\"}"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	_ = c
}
