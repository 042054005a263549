package cell

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/natsjs"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

func storedBatch(hashes []uint64, parent uint64) *events.Batch {
	ev := events.Event{Kind: events.KindBlockStored, BlockHashes: hashes, TokenIDs: tokens(16 * len(hashes)), BlockSize: 16, Medium: "GPU"}
	if parent != 0 {
		ev.ParentHash, ev.HasParent = parent, true
		for i := range ev.TokenIDs {
			ev.TokenIDs[i] += uint32(parent)
		}
	}
	return &events.Batch{DPRank: -1, TS: float64(time.Now().UnixNano()) / 1e9, Events: []events.Event{ev}}
}

// TestCellOverZMQ runs celld's configuration path for a vLLM pod: the cell
// dials the pod's PUB and replay sockets, becomes ready, and indexes what
// the pod publishes, including a batch the pod never sent (repaired from
// the replay socket).
func TestCellOverZMQ(t *testing.T) {
	pcfg := vllmpub.DefaultConfig("pod-z", "m")
	pcfg.Form = vllmwire.FormMap
	pcfg.Skip = func(seq uint64) bool { return seq == 1 } // lost on the wire, kept for replay
	pub, err := vllmpub.New(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()

	cfg := testConfig()
	cfg.Events.DefaultModel = "m"
	cfg.Pods = []PodConfig{{ID: "pod-z", ZMQEndpoint: pub.Endpoint(), ReplayEndpoint: pub.ReplayEndpoint()}}
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "readyz", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })
	waitFor(t, "subscription", pub.Subscribed)

	for i, b := range []*events.Batch{storedBatch([]uint64{1, 2}, 0), storedBatch([]uint64{3}, 2), storedBatch([]uint64{4, 5}, 3)} {
		if _, err := pub.Publish(b); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	waitFor(t, "5 blocks indexed", func() bool { return c.Index().Stats().Blocks == 5 })
	// Replay counters can lag the index by a moment (the end marker of a
	// replay is read after its batches were applied): wait for them.
	var metrics string
	waitFor(t, "replay counters", func() bool {
		_, metrics = get(t, base+"/metrics")
		return strings.Contains(metrics, `cellrouter_transport_replays_total{cell="cell-0",outcome="succeeded",transport="zmq"} 2`)
	})
	for _, want := range []string{
		// One catch-up replay at connect, one for the lost batch.
		`cellrouter_transport_replays_total{cell="cell-0",outcome="succeeded",transport="zmq"} 2`,
		`cellrouter_transport_replays_total{cell="cell-0",outcome="failed",transport="zmq"} 0`,
		`cellrouter_transport_gap_give_ups_total{cell="cell-0",transport="zmq"} 0`,
		`cellrouter_events_gaps_total{cell="cell-0"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// startNATS runs an embedded NATS server with JetStream on 127.0.0.1 until
// the test ends.
func startNATS(t *testing.T) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(20 * time.Second) {
		t.Fatal("nats server not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// TestCellOverNATS runs celld with the NATS JetStream transport against an
// embedded NATS server.
func TestCellOverNATS(t *testing.T) {
	ns := startNATS(t)

	cfg := withPods(testConfig(), "pod-n")
	cfg.NATS.URL = ns.ClientURL()
	cfg.NATS.CreateStream = true
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "readyz", func() bool { code, _ := get(t, base+"/readyz"); return code == 200 })

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	p := natsjs.NewPublisher(js, cfg.NATS.SubjectPrefix)
	ctx := context.Background()
	for _, b := range []*events.Batch{storedBatch([]uint64{7, 8, 9}, 0), storedBatch([]uint64{10}, 9)} {
		b.Pod, b.Model = "pod-n", "m"
		if _, err := p.Publish(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "4 blocks indexed", func() bool { return c.Index().Stats().Blocks == 4 })
	code, body := get(t, base+"/v1/cell/pods")
	if code != 200 || !strings.Contains(body, `"id":"pod-n"`) {
		t.Fatalf("/v1/cell/pods = %d %s", code, body)
	}

	// A pod the cell does not know, on its own subject: dropped (and
	// terminated, not redelivered), no phantom pod.
	ghost := storedBatch([]uint64{70, 71}, 0)
	ghost.Pod, ghost.Model = "ghost", "m"
	if _, err := p.Publish(ctx, ghost); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the unknown pod's batch dropped", func() bool {
		return c.Applier().Counters().BatchesDropped[events.ReasonUnknownPod].Load() == 1
	})
	if code, body := get(t, base+"/v1/cell/pods"); code != 200 || strings.Contains(body, "ghost") || c.Index().Stats().Blocks != 4 {
		t.Fatalf("after an unknown pod's batch: /v1/cell/pods = %d %s, %d blocks; want pod-n only, 4 blocks", code, body, c.Index().Stats().Blocks)
	}
}
