package global

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell"
)

// startRejoinDaemon runs a globald with fast failure detection and
// rejoining, bound to bind, without seeds; crash kills its gossip node
// without a leave (as SIGKILL would) and stops it.
func startRejoinDaemon(t *testing.T, bind string) (d *Daemon, crash func()) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.HTTPAddr, cfg.GRPCAddr, cfg.ProbeTimeout = "127.0.0.1:0", "127.0.0.1:0", 5*time.Second
	pool := DefaultPoolConfig()
	pool.Bind = bind
	pool.ProbeInterval, pool.ProbeTimeout = 100*time.Millisecond, 50*time.Millisecond
	pool.RejoinInterval, pool.RejoinMaxInterval = 200*time.Millisecond, time.Second
	var err error
	// The address of a crashed replica may linger a moment.
	waitFor(t, "globald starts on "+bind, func() bool {
		d, err = NewDaemon(cfg, pool, quiet)
		return err == nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var once sync.Once
	crash = func() { once.Do(func() { d.node.Kill(); cancel(); <-done }) }
	t.Cleanup(crash)
	return d, crash
}

func getBody(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDaemonRejoinsAfterRestartWithoutSeed is failure 3 through the real
// daemons: globald (started without a seed, as the README's first globald
// is) and a cell seeded with it route a request; globald crashes, the
// cell declares it dead, and a new globald on the same gossip address,
// again without a seed, is alone (its /readyz says so) until the cell's
// rejoin loop finds it; then it routes to the cell again. Before, the cell
// used its seeds only at start and globald answered no_cell_available
// until stopped.
func TestDaemonRejoinsAfterRestartWithoutSeed(t *testing.T) {
	hits := &sync.Map{}
	d, crash := startRejoinDaemon(t, "127.0.0.1:0")
	gossipAddr := d.GossipAddr()

	cfg := cell.DefaultConfig()
	cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, cfg.HealthInterval = "cell-a", "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.Pods = []cell.PodConfig{{ID: "cell-a-pod0", Address: testPod(t, "cell-a-pod0", hits)}}
	cfg.Gossip.Bind, cfg.Gossip.Seeds = "127.0.0.1:0", []string{gossipAddr}
	cfg.Gossip.SummaryInterval = 100 * time.Millisecond
	cfg.Gossip.ProbeInterval, cfg.Gossip.ProbeTimeout, cfg.Gossip.SuspicionMult = 100*time.Millisecond, 50*time.Millisecond, 2
	cfg.Gossip.RejoinInterval, cfg.Gossip.RejoinMaxInterval = 200*time.Millisecond, time.Second
	c, err := cell.New(cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cellDone := make(chan error, 1)
	go func() { cellDone <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-cellDone })

	routed := func(d *Daemon) bool {
		resp, _ := post(t, "http://"+d.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": tokens(3, 64), "max_tokens": 1})
		return resp.StatusCode == http.StatusOK && resp.Header.Get(CellHeader) == "cell-a"
	}
	waitFor(t, "globald routes to the cell", func() bool { return knows(d, "cell-a") && routed(d) })
	cellReady := "http://" + c.HTTPAddr() + "/readyz"
	if code, body := getBody(t, cellReady); code != http.StatusOK || strings.Contains(body, "degraded") {
		t.Fatalf("cell in its pool: /readyz %d %q", code, body)
	}

	crash()
	// The cell, alone, stays ready and says it is degraded.
	waitFor(t, "the cell says it is alone", func() bool {
		code, body := getBody(t, cellReady)
		return code == http.StatusOK && strings.Contains(body, "degraded: alone in the gossip pool")
	})

	d2, _ := startRejoinDaemon(t, gossipAddr) // no seed
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for !(knows(d2, "cell-a") && routed(d2)) {
		if time.Now().After(deadline) {
			_, body := getBody(t, "http://"+d2.HTTPAddr()+"/readyz")
			t.Fatalf("the restarted globald did not route to the cell within 20s (readyz: %q)", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("routing again %v after the restart", time.Since(start).Round(time.Millisecond))
	if code, body := getBody(t, "http://"+d2.HTTPAddr()+"/readyz"); code != http.StatusOK {
		t.Fatalf("the rejoined globald: /readyz %d %q", code, body)
	}
	_, metrics := getBody(t, "http://"+d2.HTTPAddr()+"/metrics")
	for _, want := range []string{`cellrouter_gossip_alone{tier="global"} 0`, `cellrouter_gossip_members{tier="global"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestDaemonAloneNotReady: a globald alone in its pool is not ready and
// says why, in /readyz and in cellrouter_gossip_alone.
func TestDaemonAloneNotReady(t *testing.T) {
	d, _ := startRejoinDaemon(t, "127.0.0.1:0")
	code, body := getBody(t, "http://"+d.HTTPAddr()+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.Contains(body, "alone in the gossip pool") {
		t.Fatalf("/readyz of a lone globald: %d %q", code, body)
	}
	_, metrics := getBody(t, "http://"+d.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, `cellrouter_gossip_alone{tier="global"} 1`) {
		t.Fatalf("metrics of a lone globald lack cellrouter_gossip_alone 1:\n%s", metrics)
	}
}
