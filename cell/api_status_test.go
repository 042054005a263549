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

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/statuspage"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// TestCellStatusPage publishes events of two pods (one keeps its blocks
// on the GPU, one on the CPU), drains one, and checks that GET /status
// shows each pod with its state, its blocks by tier and the cell's
// figures, under the status page's headers.
func TestCellStatusPage(t *testing.T) {
	cfg := withPods(testConfig(), "pod-gpu", "pod-cpu")
	cfg.Status.Refresh = 2 * time.Second
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
	for i, pod := range []struct{ id, medium string }{{"pod-gpu", "GPU"}, {"pod-cpu", "CPU"}} {
		ev := &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockStored{BlockStored: &eventsv1.BlockStored{
			BlockHashes: []uint64{uint64(100*i + 1), uint64(100*i + 2), uint64(100*i + 3), uint64(100*i + 4)},
			TokenIds:    tokens(64), BlockSize: 16, Medium: pod.medium,
		}}}
		if err := stream.Send(&eventsv1.PublishRequest{Pod: pod.id, Model: "m", Ts: float64(time.Now().UnixNano()) / 1e9, Events: []*eventsv1.KVEvent{ev}}); err != nil {
			t.Fatal(err)
		}
		if resp, err := stream.Recv(); err != nil || resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED {
			t.Fatalf("%s: %v %v", pod.id, resp, err)
		}
	}
	stream.CloseSend()
	if _, err := c.state.DrainPod(context.Background(), &cellv1.DrainPodRequest{Id: "pod-cpu"}); err != nil {
		t.Fatal(err)
	}

	resp, err := http.Get(base + StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	page := string(b)
	if resp.StatusCode != 200 {
		t.Fatalf("GET /status = %d %s", resp.StatusCode, page)
	}
	if got := resp.Header.Get("Content-Security-Policy"); got != statuspage.ContentSecurityPolicy {
		t.Errorf("Content-Security-Policy = %q, want %q", got, statuspage.ContentSecurityPolicy)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	// The figures come from the state API's builders: the page must agree
	// with /v1/cell/state.
	st, err := c.state.GetCellState(context.Background(), &cellv1.GetCellStateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	tiers := map[string]string{}
	for _, p := range []string{"pod-gpu", "pod-cpu"} {
		pods, _ := c.state.ListPods(context.Background(), &cellv1.ListPodsRequest{})
		for _, pp := range pods.GetPods() {
			if pp.GetId() != p {
				continue
			}
			n := statuspage.Count(int64(pp.GetIndexedRouterBlocks()))
			if p == "pod-gpu" {
				tiers[p] = n + " / 0 / 0"
			} else {
				tiers[p] = "0 / " + n + " / 0"
			}
		}
	}
	for _, want := range []string{
		"<title>celld cell-0</title>", `<meta http-equiv="refresh" content="2">`,
		`<td class="pod-id"><code>pod-gpu</code></td>`, `<td class="pod-id"><code>pod-cpu</code></td>`,
		`<td class="warn">draining</td>`, `<td class="ok">ready</td>`,
		`<td class="n">` + tiers["pod-gpu"] + `</td>`, `<td class="n">` + tiers["pod-cpu"] + `</td>`,
		"<dt>indexed router blocks</dt><dd>" + statuspage.Count(int64(st.GetIndexedRouterBlocks())) + " ",
		"<dt>events applied</dt><dd>" + statuspage.Count(int64(st.GetEventsApplied())) + " ",
		"No decisions yet.", // the ring is on, and nothing was routed
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if st.GetIndexedRouterBlocks() == 0 {
		t.Error("nothing indexed: the test shows no blocks")
	}
}

// TestCellStatusPageAuth checks that the status page is the control
// plane's: 401 without a key, 403 for a key or certificate without the
// admin scope (OpenAI's error shape), 200 for an admin key or an admin
// certificate, and that no key appears on it.
func TestCellStatusPageAuth(t *testing.T) {
	s := startSecureCell(t, tlsconf.VerifyClientCertIfGiven)
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	for _, tt := range []struct {
		name     string
		client   bool // the admin certificate
		peer     bool // globald's certificate
		hdr      map[string]string
		want     int
		wantCode string
	}{
		{"no key", false, false, nil, 401, "missing_api_key"},
		{"unknown key", false, false, bearer("nope"), 401, "invalid_api_key"},
		{"inference key", false, false, bearer("acme-key"), 403, "insufficient_scope"},
		{"events key", false, false, bearer("pub-key"), 403, "insufficient_scope"},
		{"globald's certificate", false, true, nil, 403, "insufficient_scope"},
		{"admin key", false, false, bearer("ops-key"), 200, ""},
		{"admin certificate", true, false, nil, 200, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			client := s.anon
			switch {
			case tt.client:
				client = s.admin
			case tt.peer:
				client = s.peer
			}
			code, h, body, err := s.call(t, client, "GET", StatusPath, "", tt.hdr)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.want {
				t.Fatalf("got %d %s, want %d", code, body, tt.want)
			}
			if tt.wantCode != "" {
				if got := strings.Trim(string(servertest.ErrorBody(t, body).Code), `"`); got != tt.wantCode {
					t.Errorf("code = %s, want %s", got, tt.wantCode)
				}
				if code == 401 && h.Get("WWW-Authenticate") == "" {
					t.Error("a 401 without WWW-Authenticate")
				}
				return
			}
			if !strings.Contains(body, "<code>pod-a</code>") {
				t.Errorf("the page does not show pod-a: %s", body)
			}
			for _, k := range []string{"acme-key", "lab-key", "ops-key", "pub-key"} {
				if strings.Contains(body, k) {
					t.Errorf("the page shows the key %q", k)
				}
			}
		})
	}
}

func TestLagOf(t *testing.T) {
	var h events.LagHistogram
	if got := lagOf(&h); got.Batches != 0 || got.P99 != "" {
		t.Errorf("no batches: %+v, want nothing", got)
	}
	for range 99 {
		h.Observe(3 * time.Millisecond)
	}
	h.Observe(-time.Millisecond)
	got := lagOf(&h)
	if got.Batches != 100 || got.Negative != 1 || got.P99 != "≤ 5.0ms" || got.Mean != (99*3-1)*time.Millisecond/100 {
		t.Errorf("lagOf = %+v, want 100 batches, 1 negative, p99 ≤ 5.0ms, mean 2.96ms", got)
	}
	for range 1000 {
		h.Observe(time.Minute)
	}
	if got := lagOf(&h); got.P99 != "> 10.0s" {
		t.Errorf("p99 past the last bucket = %q, want > 10.0s", got.P99)
	}
}
