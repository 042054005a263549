package fleet

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestDemoFleetServesAndReusesCache starts the demo fleet, sends the same
// prompt twice through the global endpoint, and checks the second answer
// came from a pod's prefix cache.
func TestDemoFleetServesAndReusesCache(t *testing.T) {
	cfg := DefaultConfig()
	cfg.PodsPerCell = 2
	cfg.Pod.TimeScale = 0
	cfg.SummaryInterval = 100 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	prompt := make([]int, 512)
	for i := range prompt {
		prompt[i] = 1000 + i
	}
	body, _ := json.Marshal(map[string]any{"model": cfg.Pod.Model, "prompt": prompt, "max_tokens": 4})
	send := func() (string, int) {
		resp, err := http.Post(f.Endpoint()+"/v1/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, b)
		}
		var out struct {
			Usage struct {
				Details struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		json.Unmarshal(b, &out)
		return resp.Header.Get("X-Cellrouter-Pod"), out.Usage.Details.Cached
	}
	pod, _ := send()
	// Once the pod's KV events reached its cell and the cell's summary
	// reached the global tier, the same prompt returns to the same pod and
	// hits its cache.
	deadline := time.Now().Add(30 * time.Second)
	for {
		again, cached := send()
		if again == pod && cached > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second request went to %s with %d cached tokens; first went to %s", again, cached, pod)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestStartFailsCleanlyOnATakenPort starts a fleet whose global HTTP port
// another listener holds: Start returns the listen error naming the port,
// and a Close after it (as callers used to make) does not panic.
func TestStartFailsCleanlyOnATakenPort(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := DefaultConfig()
	cfg.Cells, cfg.PodsPerCell, cfg.GlobalHTTPAddr = 1, 1, l.Addr().String()
	f, err := Start(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Fatalf("Start: got %v, want an error naming %s", err, l.Addr())
	}
	if f != nil {
		first := f.Close()
		if second := f.Close(); second != first {
			t.Errorf("Close twice: got %v then %v, want the same result", first, second)
		}
	}
}
