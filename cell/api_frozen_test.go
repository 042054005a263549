package cell

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// frozenBound is the first-byte bound (and liveness timeout) of these
// tests: a frozen pod costs a request about twice this, then one retry.
const frozenBound = 300 * time.Millisecond

// watchFast sets short watch bounds on cfg.
func watchFast(cfg *Config) {
	w := &cfg.Routing.Watch
	w.FirstByteTimeout, w.FirstByteTimeoutMax, w.LivenessTimeout = frozenBound, frozenBound, frozenBound
	w.StreamIdleTimeout = 30 * time.Second
	w.EjectBaseTime, w.EjectMaxTime = 300*time.Millisecond, time.Second
}

// streamCompletion sends a streamed completion and returns the status, the
// events read until the body ended and how long it all took.
func streamCompletion(t *testing.T, base string, toks []uint32) (int, []string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": toks, "max_tokens": 16, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "data: ") {
			events = append(events, line)
		}
	}
	return resp.StatusCode, events, time.Since(start)
}

// TestFrozenPodRetriedAndEjected: a pod that accepts connections and never
// answers (a stopped process) holds the prompt's prefix, so the pipeline
// picks it first; the request goes to the next pod after the first-byte
// bound and a failed liveness check, and the frozen pod is ejected: the
// next requests do not wait for it.
func TestFrozenPodRetriedAndEjected(t *testing.T) {
	live := newFakePod(t, "live")
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "frozen", Address: servertest.SilentAddr(t), KVBlocks: 10000}, {ID: "live", Address: live.addr(), KVBlocks: 10000}}
	watchFast(&cfg)
	c := startCell(t, cfg)
	toks := promptTokens(5)
	holdPrefix(t, c, "frozen", toks, 32)
	base := "http://" + c.HTTPAddr()

	code, events, took := streamCompletion(t, base, toks)
	if code != 200 || len(events) == 0 || !strings.Contains(events[0], "live-0") {
		t.Fatalf("status %d, events %q: want the live pod's stream", code, events)
	}
	if took < frozenBound || took > 2*frozenBound+3*time.Second {
		t.Fatalf("the request took %v, want the first-byte bound plus a liveness check (%v) and one retry", took, 2*frozenBound)
	}
	if !c.proxy.Ejected(cfg.Pods[0].Address) {
		t.Fatal("the frozen pod was not ejected")
	}
	// Still the prefix holder, but ejected: ranked last, not waited for.
	code, events, _ = streamCompletion(t, base, toks)
	if code != 200 || len(events) == 0 || !strings.Contains(events[0], "live-0") {
		t.Fatalf("second request: status %d, events %q: want the live pod", code, events)
	}
	if st := c.proxy.WatchStats(); st.FirstByteTimeouts != 1 {
		t.Fatalf("stats = %+v: the ejected pod was waited for again", st)
	}
	_, metrics := get(t, base+"/metrics")
	for _, m := range []string{`cellrouter_upstream_first_byte_timeouts_total{cell="cell-1"} 1`, `cellrouter_upstream_ejected{cell="cell-1"} 1`} {
		if !strings.Contains(metrics, strings.ReplaceAll(m, "cell-1", cfg.CellID)) {
			t.Errorf("metrics lack %s", m)
		}
	}
}

// TestPodFrozenMidStreamEndsWithErrorEvent: a pod that sends its headers
// and a chunk and then stops (its health endpoint too) gets its stream
// ended with an OpenAI error event within the bound and a liveness check;
// it is ejected, and readmitted once it answers again.
func TestPodFrozenMidStreamEndsWithErrorEvent(t *testing.T) {
	var pod *servertest.Freezable
	pod = servertest.NewFreezable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			return // health, models: answered while not frozen
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
		http.NewResponseController(w).Flush()
		pod.Freeze()
		if pod.Gate(r) {
			io.WriteString(w, "data: [DONE]\n\n")
		}
	}))
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "p", Address: pod.Addr(), KVBlocks: 10000}}
	watchFast(&cfg)
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	code, events, took := streamCompletion(t, base, promptTokens(6))
	if code != 200 || len(events) != 2 || !strings.HasPrefix(events[1], `data: {"error":{`) || !strings.Contains(events[1], "upstream_stalled") {
		t.Fatalf("status %d, events %q: want the chunk, then an OpenAI error event", code, events)
	}
	if took > 2*frozenBound+3*time.Second {
		t.Fatalf("the stalled stream ended after %v, want about %v", took, 2*frozenBound)
	}
	if !c.proxy.Ejected(pod.Addr()) {
		t.Fatal("the pod frozen mid-stream was not ejected")
	}
	pod.Thaw()
	waitFor(t, "the thawed pod readmitted", func() bool { return !c.proxy.Ejected(pod.Addr()) })
	if st := c.proxy.WatchStats(); st.Stalls != 1 || st.Readmissions != 1 {
		t.Fatalf("stats = %+v, want one stall and one readmission", st)
	}
}
