package cell

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/cellrouter/cellrouter/api"
	"github.com/cellrouter/cellrouter/api/apitest"
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/internal/buildinfo"
)

// TestCellStateNamesUnconfiguredPodsAndBlockSizes publishes the events of a
// configured pod, discovers one that is not configured, and checks that the
// state API counts only the first READY (the second UNCONFIGURED: it has
// no address and is never routed to) and that the pods list names its
// engine blocks and its router blocks apart from the cell's router blocks.
func TestCellStateNamesUnconfiguredPodsAndBlockSizes(t *testing.T) {
	cfg := withPods(testConfig(), "pod-a")
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })

	conn, err := grpc.NewClient(c.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	stream, err := eventsv1.NewEventPublisherClient(conn).Publish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 64 tokens in engine blocks of 16: 4 engine blocks, and as many
	// router blocks of testConfig's size as 64 tokens make.
	stored := &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockStored{BlockStored: &eventsv1.BlockStored{
		BlockHashes: []uint64{11, 12, 13, 14}, TokenIds: tokens(64), BlockSize: 16, Medium: "GPU",
	}}}
	for _, pod := range []string{"pod-a"} {
		if err := stream.Send(&eventsv1.PublishRequest{Pod: pod, Model: "m", EventId: 0, Ts: float64(time.Now().UnixNano()) / 1e9, Events: []*eventsv1.KVEvent{stored}}); err != nil {
			t.Fatal(err)
		}
		resp, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED {
			t.Fatalf("%s: status %v (%s %s), want APPLIED", pod, resp.GetStatus(), resp.GetReason(), resp.GetDetail())
		}
	}
	stream.CloseSend()
	// gRPC publishing refuses a pod that is not configured; a ZMQ topic or
	// a NATS subject naming one discovers it, as this does.
	c.reg.ObserveBatch("stray", "stray", 7, 0, true, false, time.Now())
	routerBlocks := uint64(c.Index().Stats().Blocks)
	if routerBlocks == 0 {
		t.Fatal("nothing indexed")
	}

	var state struct {
		PodsByState []struct {
			State string `json:"state"`
			Count int    `json:"count"`
		} `json:"podsByState"`
		IndexedBlocks       string `json:"indexedBlocks"`
		IndexedRouterBlocks string `json:"indexedRouterBlocks"`
	}
	code, body := get(t, base+"/v1/cell/state")
	if code != 200 {
		t.Fatalf("/v1/cell/state = %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &state); err != nil {
		t.Fatalf("/v1/cell/state: %v: %s", err, body)
	}
	got := map[string]int{}
	for _, s := range state.PodsByState {
		got[s.State] = s.Count
	}
	if got["POD_STATE_READY"] != 1 || got["POD_STATE_UNCONFIGURED"] != 1 || len(got) != 2 {
		t.Errorf("podsByState = %v, want READY 1 (pod-a) and UNCONFIGURED 1 (stray)", got)
	}
	if state.IndexedRouterBlocks != u64(routerBlocks) || state.IndexedBlocks != state.IndexedRouterBlocks {
		t.Errorf("indexedRouterBlocks %q, indexedBlocks %q, want both %d", state.IndexedRouterBlocks, state.IndexedBlocks, routerBlocks)
	}

	var pods struct {
		Pods []struct {
			ID                  string `json:"id"`
			State               string `json:"state"`
			Blocks              string `json:"blocks"`
			EngineBlocks        string `json:"engineBlocks"`
			IndexedRouterBlocks string `json:"indexedRouterBlocks"`
		} `json:"pods"`
	}
	code, body = get(t, base+"/v1/cell/pods")
	if code != 200 {
		t.Fatalf("/v1/cell/pods = %d %s", code, body)
	}
	if err := json.Unmarshal([]byte(body), &pods); err != nil {
		t.Fatalf("/v1/cell/pods: %v: %s", err, body)
	}
	seen := map[string]string{}
	for _, p := range pods.Pods {
		seen[p.ID] = p.State
		if p.ID != "pod-a" {
			continue
		}
		if p.EngineBlocks != "4" || p.Blocks != p.EngineBlocks {
			t.Errorf("pod %s: engineBlocks %q, blocks %q, want both 4 (engine blocks of 16 tokens)", p.ID, p.EngineBlocks, p.Blocks)
		}
		if p.IndexedRouterBlocks != u64(routerBlocks) {
			t.Errorf("pod %s: indexedRouterBlocks %q, want %d (the same prompt as the index holds)", p.ID, p.IndexedRouterBlocks, routerBlocks)
		}
	}
	if seen["pod-a"] != "POD_STATE_READY" || seen["stray"] != "POD_STATE_UNCONFIGURED" {
		t.Errorf("pod states %v, want pod-a READY and stray UNCONFIGURED", seen)
	}
	code, body = get(t, base+"/v1/cell/pods?state=POD_STATE_READY")
	if code != 200 || !json.Valid([]byte(body)) {
		t.Fatalf("/v1/cell/pods?state=POD_STATE_READY = %d %s", code, body)
	}
	pods.Pods = nil
	if err := json.Unmarshal([]byte(body), &pods); err != nil {
		t.Fatal(err)
	}
	if len(pods.Pods) != 1 || pods.Pods[0].ID != "pod-a" {
		t.Errorf("READY pods %+v, want only pod-a", pods.Pods)
	}
}

// u64 renders n as protojson renders a uint64: a decimal string.
func u64(n uint64) string { return strconv.FormatUint(n, 10) }

// TestCellServesItsOpenAPIDocument fetches the document a running cell
// serves and checks it: title, the build's version, the bearer scheme,
// OpenAI's error body and the data plane.
func TestCellServesItsOpenAPIDocument(t *testing.T) {
	c := startCell(t, testConfig())
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })
	code, body := get(t, base+api.OpenAPIPath("cell"))
	if code != 200 {
		t.Fatalf("GET %s = %d %s", api.OpenAPIPath("cell"), code, body)
	}
	apitest.CheckDocument(t, "cell", buildinfo.Read().Version, []byte(body))
}
