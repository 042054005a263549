package compare

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBypassFrontSplits checks the front over real sockets: the share of
// requests it sends around the cell, that the same body always takes the
// same way, and that bodies and answers pass through whole.
func TestBypassFrontSplits(t *testing.T) {
	var toCell, toPods atomic.Int64
	echo := func(n *atomic.Int64, who string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n.Add(1)
			body, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "%s:%s", who, body)
		}))
	}
	cell, pod0, pod1 := echo(&toCell, "cell"), echo(&toPods, "pod0"), echo(&toPods, "pod1")
	defer cell.Close()
	defer pod0.Close()
	defer pod1.Close()
	f, err := startBypassFront(cell.URL, []string{pod0.URL, pod1.URL}, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const n = 1000
	first := map[int]string{}
	for round := range 2 {
		for i := range n {
			body := fmt.Sprintf(`{"prompt":"request %d"}`, i)
			resp, err := http.Post(f.URL()+"/v1/completions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			who, echoed, _ := strings.Cut(string(got), ":")
			if echoed != body {
				t.Fatalf("body %q came back as %q", body, echoed)
			}
			if round == 0 {
				first[i] = who
			} else if first[i] != who {
				t.Fatalf("request %d went to %s, then to %s", i, first[i], who)
			}
		}
	}
	share := float64(toPods.Load()) / float64(toPods.Load()+toCell.Load())
	if math.Abs(share-0.2) > 0.04 {
		t.Fatalf("bypassed share %.3f, want 0.2 +- 0.04", share)
	}
	if f.bypassed.Load() != toPods.Load() || f.routed.Load() != toCell.Load() {
		t.Fatalf("counts: front %d/%d, servers %d/%d", f.bypassed.Load(), f.routed.Load(), toPods.Load(), toCell.Load())
	}
}

// TestRunBypassTiny runs kv against kv-engine with a share of the traffic
// around the cell, and checks the report's bypass figure is filled in and
// the other fields keep their shape.
func TestRunBypassTiny(t *testing.T) {
	cfg := DefaultConfig()
	cfg.TracePath = writeTrace(t, conversations(3, 4, 150))
	cfg.Sample, cfg.TimeScale, cfg.Pods, cfg.BlocksPerPod = 1, 1, 3, 4096
	cfg.PrefillPerToken, cfg.DecodePerToken, cfg.MaxTokensCap = time.Microsecond, 100*time.Microsecond, 4
	cfg.Modes, cfg.Bypass, cfg.BypassPods = []string{ModeKV, ModeKVEngine}, 0.3, 1
	rep, err := Run(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cfg.Modes {
		if r := rep.Modes[m]; r.OK != 12 || r.Bypassed == 0 || r.Bypassed == 12 {
			t.Errorf("mode %s: %d ok, %d bypassed; want 12 ok, some bypassed", m, r.OK, r.Bypassed)
		}
	}
	b := rep.Bypass
	if b == nil || b.Share != 0.3 || b.Pods != 1 || b.KVTTFTP90Ms <= 0 || b.KVEngineTTFTP90Ms <= 0 || b.TTFTP90Ratio != b.KVTTFTP90Ms/b.KVEngineTTFTP90Ms {
		t.Fatalf("bypass figure %+v", b)
	}
	data, _ := json.Marshal(rep)
	var got map[string]any
	_ = json.Unmarshal(data, &got)
	if _, ok := got["bypass"].(map[string]any)["ttft_p90_ratio"].(float64); !ok {
		t.Errorf("JSON lacks bypass.ttft_p90_ratio: %s", data)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil || !strings.Contains(table.String(), "around the cell") {
		t.Errorf("WriteTable got %q (%v), want the bypass line", table.String(), err)
	}
}
