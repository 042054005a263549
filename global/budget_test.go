package global

import (
	"net/http"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGlobalBodyBudget floods an authenticated globald (a real server on
// 127.0.0.1:0, in front of a real cell) with large bodies while its
// buffered-bytes budget is spent by two requests whose bodies are still
// arriving: every one of the flood is refused with 503, Retry-After and
// OpenAI's error shape before its body is read, the buffered-bytes gauge
// shows what the two hold, and once they finish it returns to 0 and large
// bodies are accepted again.
func TestGlobalBodyBudget(t *testing.T) {
	const size = 60 << 10
	s := startSecureTier(t, func(c *Config) {
		c.Limits.MaxBodyBytes, c.Limits.MaxBufferedBytes = 64<<10, 128<<10
	})
	body := servertest.TokenCompletion("m", size)
	key := map[string]string{"Authorization": "Bearer lab-key"}
	gauge := func() float64 {
		_, _, page := s.call(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer ops-key"})
		v, ok := servertest.MetricValue(page, "cellrouter_buffered_request_bytes")
		if !ok {
			t.Fatalf("no cellrouter_buffered_request_bytes in /metrics")
		}
		return v
	}
	held := []*servertest.HeldRequest{
		servertest.Hold(t, s.g.HTTPAddr(), "/v1/completions", key, body),
		servertest.Hold(t, s.g.HTTPAddr(), "/v1/completions", key, body),
	}
	waitFor(t, "two held bodies reserved", func() bool { return gauge() == float64(2*len(body)) })

	for i, a := range servertest.Flood(s.base+"/v1/completions", 24, key, body) {
		servertest.CheckOverloaded(t, "flood request "+string(rune('a'+i)), a)
	}
	if hits := s.pod.count(); hits != 0 {
		t.Fatalf("the pod saw %d requests while the budget was spent, want 0", hits)
	}
	_, _, page := s.call(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer ops-key"})
	if v, _ := servertest.MetricValue(page, `cellrouter_limit_hits_total{limit="buffer_budget"}`); v != 24 {
		t.Errorf("buffer_budget hits: got %v, want 24", v)
	}

	for i, h := range held {
		if status, _, b := h.Finish(t); status != http.StatusOK {
			t.Fatalf("held request %d: got %d %.200s, want 200", i, status, b)
		}
	}
	waitFor(t, "the budget back to 0", func() bool { return gauge() == 0 })
	for i, a := range servertest.Flood(s.base+"/v1/completions", 2, key, body) {
		if a.Err != nil || a.Status != http.StatusOK || !strings.Contains(a.Body, "from pod-a") {
			t.Fatalf("request %d after the flood: got %d %v %.200s, want 200 from pod-a", i, a.Status, a.Err, a.Body)
		}
	}
	waitFor(t, "the budget back to 0 again", func() bool { return gauge() == 0 })
}
