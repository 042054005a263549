package cell

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestCellBodyBudget floods a real cell on 127.0.0.1:0 with large bodies
// while its buffered-bytes budget is spent by two requests whose bodies
// are still arriving: every one of the flood is refused with 503,
// Retry-After and OpenAI's error shape before its body is read, nothing
// reaches the pod, and once the two finish the buffered-bytes gauge
// returns to 0 and large bodies are accepted again.
func TestCellBodyBudget(t *testing.T) {
	pod := newFakePod(t, "pod-a")
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "pod-a", Address: pod.addr(), KVBlocks: 10000}}
	cfg.Routing.MaxBodyBytes, cfg.Limits.MaxBufferedBytes = 64<<10, 128<<10
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	body := servertest.TokenCompletion("m", 60<<10)
	gauge := func() float64 {
		_, page := get(t, base+"/metrics")
		v, ok := servertest.MetricValue(page, "cellrouter_buffered_request_bytes")
		if !ok {
			t.Fatalf("no cellrouter_buffered_request_bytes in /metrics")
		}
		return v
	}
	held := []*servertest.HeldRequest{
		servertest.Hold(t, c.HTTPAddr(), "/v1/completions", nil, body),
		servertest.Hold(t, c.HTTPAddr(), "/v1/completions", nil, body),
	}
	waitFor(t, "two held bodies reserved", func() bool { return gauge() == float64(2*len(body)) })
	for _, a := range servertest.Flood(base+"/v1/completions", 24, nil, body) {
		servertest.CheckOverloaded(t, "flood request", a)
	}
	if n := pod.count(); n != 0 {
		t.Fatalf("the pod saw %d requests while the budget was spent, want 0", n)
	}
	for i, h := range held {
		if status, _, b := h.Finish(t); status != http.StatusOK {
			t.Fatalf("held request %d: got %d %.200s, want 200", i, status, b)
		}
	}
	waitFor(t, "the budget back to 0", func() bool { return gauge() == 0 })
	for i, a := range servertest.Flood(base+"/v1/completions", 2, nil, body) {
		if a.Err != nil || a.Status != http.StatusOK || !strings.Contains(a.Body, "hello from pod-a") {
			t.Fatalf("request %d after the flood: got %d %v %.200s, want 200 from pod-a", i, a.Status, a.Err, a.Body)
		}
	}
	waitFor(t, "the budget back to 0 again", func() bool { return gauge() == 0 })
}
