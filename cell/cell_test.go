package cell

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.GRPCAddr = "127.0.0.1:0"
	cfg.HealthInterval = 0
	cfg.TickInterval = 50 * time.Millisecond
	return cfg
}

// withPods returns cfg with pods ids configured (no address: their events
// are indexed, nothing is routed to them), since a cell refuses the events
// of pods it does not know.
func withPods(cfg Config, ids ...string) Config {
	for _, id := range ids {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: id})
	}
	return cfg
}

// startCell runs a cell, logging nowhere, until the test ends.
func startCell(t *testing.T, cfg Config, opts ...Option) *Cell {
	t.Helper()
	c, _ := runCell(t, cfg, nil, opts...)
	return c
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func tokens(n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(1000 + i)
	}
	return out
}

// TestCellOverGRPCPublish drives a whole cell over real sockets: a
// publisher sidecar streams events over gRPC, and the state shows up in the
// index, the REST state API and the metrics. It runs with both index
// layouts (index.layout): the paged one needs the applier to place every
// op, removals included.
func TestCellOverGRPCPublish(t *testing.T) {
	for _, layout := range []string{"block", "paged"} {
		t.Run(layout, func(t *testing.T) { testCellOverGRPCPublish(t, layout) })
	}
}

func testCellOverGRPCPublish(t *testing.T, layout string) {
	cfg := withPods(testConfig(), "pod-a")
	cfg.Index.Layout = layout
	c := startCell(t, cfg)
	if got := string(c.Index().Layout()); got != layout {
		t.Fatalf("index layout %q, want %q", got, layout)
	}
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })
	if code, body := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz = %d %q, want 200 (no transport to wait for)", code, body)
	}

	conn, err := grpc.NewClient(c.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := eventsv1.NewEventPublisherClient(conn).Publish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stored := &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockStored{BlockStored: &eventsv1.BlockStored{
		BlockHashes: []uint64{11, 12, 13, 14}, TokenIds: tokens(64), BlockSize: 16, Medium: "GPU",
	}}}
	removed := &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockRemoved{BlockRemoved: &eventsv1.BlockRemoved{BlockHashes: []uint64{14}}}}
	for i, evs := range [][]*eventsv1.KVEvent{{stored}, {removed}} {
		if err := stream.Send(&eventsv1.PublishRequest{Pod: "pod-a", Model: "m", EventId: uint64(i), Ts: float64(time.Now().UnixNano()) / 1e9, Events: evs}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED {
			t.Fatalf("batch %d: status %v (%s %s), want APPLIED", i, resp.GetStatus(), resp.GetReason(), resp.GetDetail())
		}
	}
	stream.CloseSend()

	if got := c.Index().Stats().Blocks; got != 3 {
		t.Fatalf("indexed blocks = %d, want 3 (4 stored, 1 removed)", got)
	}
	code, body := get(t, base+"/v1/cell/pods")
	if code != 200 || !strings.Contains(body, `"id":"pod-a"`) || !strings.Contains(body, "POD_STATE_READY") {
		t.Fatalf("/v1/cell/pods = %d %s", code, body)
	}
	code, body = get(t, base+"/v1/cell/state")
	if code != 200 || !strings.Contains(body, `"indexedBlocks":"3"`) {
		t.Fatalf("/v1/cell/state = %d %s", code, body)
	}
	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`cellrouter_events_batches_applied_total{cell="cell-0"} 2`,
		`cellrouter_index_blocks{cell="cell-0"} 3`,
		`cellrouter_events_applied_total{cell="cell-0",kind="BlockStored"} 1`,
		`cellrouter_pods{cell="cell-0",state="ready"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

func TestCellDrainPod(t *testing.T) {
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "p1", Address: "127.0.0.1:1"}}
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })
	resp, err := http.Post(base+"/v1/cell/pods/p1:drain", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"draining":true`) {
		t.Fatalf("drain = %d %s", resp.StatusCode, b)
	}
	resp, err = http.Post(base+"/v1/cell/pods/nope:drain", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("drain of an unknown pod = %d, want 404", resp.StatusCode)
	}
}
