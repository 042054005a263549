package cell

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/cellrouter/cellrouter/cell/enginemetrics"
)

// busyPage is a vLLM page of an engine whose KV cache is 90% used by ten
// running requests with ten more waiting: traffic the cell never routed.
const busyPage = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 10
vllm:num_requests_waiting{engine="0",model_name="m"} 10
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.9
vllm:lora_requests_info{max_lora="2",running_lora_adapters="org/m-lora",waiting_lora_adapters=""} 1.7e9
`

// TestEngineMetricsSteerAndReport runs a cell over two pods: pod a's
// engine reports heavy load the router did not route (bypass traffic), pod
// b's metrics endpoint fails. Requests avoid a; b falls back to the
// router's own estimate, and the state, the metrics and the log say so.
func TestEngineMetricsSteerAndReport(t *testing.T) {
	a, b := newFakePod(t, "a"), newFakePod(t, "b")
	a.metrics = busyPage
	cfg := testConfig()
	cfg.EngineMetrics.Interval = 20 * time.Millisecond
	cfg.EngineMetrics.Timeout = 2 * time.Second
	cfg.EngineMetrics.StaleAfter = 5 * time.Second
	cfg.Pods = []PodConfig{{ID: "a", Address: a.addr(), KVBlocks: 1000}, {ID: "b", Address: b.addr(), KVBlocks: 1000}}
	var logs syncBuffer
	c, _ := runCell(t, cfg, &logs)
	base := "http://" + c.HTTPAddr()

	type state struct {
		EngineMetricsStale uint32 `json:"engineMetricsStale"`
		EngineLoad         []struct {
			Pod         string   `json:"pod"`
			Fresh       bool     `json:"fresh"`
			Error       string   `json:"error"`
			Engine      string   `json:"engine"`
			Waiting     float64  `json:"waiting"`
			KVUsage     float64  `json:"kvUsage"`
			RunningLora []string `json:"runningLora"`
		} `json:"engineLoad"`
	}
	var st state
	waitFor(t, "a fresh scrape of a and a failed one of b", func() bool {
		code, body := get(t, base+"/v1/cell/state")
		if code != 200 {
			t.Fatalf("/v1/cell/state = %d %s", code, body)
		}
		st = state{}
		if err := json.Unmarshal([]byte(body), &st); err != nil {
			t.Fatal(err)
		}
		return len(st.EngineLoad) == 2 && st.EngineLoad[0].Fresh && st.EngineLoad[1].Error != ""
	})
	if l := st.EngineLoad[0]; l.Pod != "a" || l.Engine != "vllm" || l.Waiting != 10 || l.KVUsage != 0.9 || len(l.RunningLora) != 1 {
		t.Fatalf("engine load of a = %+v", l)
	}
	if l := st.EngineLoad[1]; l.Pod != "b" || l.Fresh || !strings.Contains(l.Error, "404") {
		t.Fatalf("engine load of b = %+v, want not fresh with the 404", l)
	}
	if st.EngineMetricsStale != 1 {
		t.Fatalf("engineMetricsStale = %d, want 1", st.EngineMetricsStale)
	}

	// Pod a carries 0.9 x 1000 x 20/10 = 1800 blocks the router never sent:
	// every request goes to b, where the router's own estimate stands.
	for i := range 8 {
		code, body := postJSON(t, base+"/v1/completions", map[string]any{"model": "m", "prompt": tokens(64 + i), "max_tokens": 4})
		if code != 200 {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
	if a.count() != 0 || b.count() != 8 {
		t.Fatalf("requests: a %d, b %d; want 0, 8", a.count(), b.count())
	}

	_, metrics := get(t, base+"/metrics")
	for _, want := range []string{
		`cellrouter_engine_metrics_stale_pods{cell="cell-0"} 1`,
		`cellrouter_engine_metrics_scrapes_total{cell="cell-0",outcome="error"}`,
		`cellrouter_engine_metrics_scrapes_total{cell="cell-0",outcome="ok"}`,
		`cellrouter_engine_metrics_round_seconds_count{cell="cell-0"}`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	waitFor(t, "the fall-back log line", func() bool {
		return strings.Contains(logs.String(), "routing these pods on the router's own load estimate")
	})
	if n := strings.Count(logs.String(), "engine metrics stale"); n != 1 {
		t.Errorf("%d fall-back log lines, want 1 (bounded rate)", n)
	}
}

// TestEngineMetricsDisabled checks that with engine_metrics off nothing is
// scraped and the state reports no engine load.
func TestEngineMetricsDisabled(t *testing.T) {
	a := newFakePod(t, "a")
	a.metrics = busyPage
	cfg := testConfig()
	cfg.EngineMetrics.Enabled = false
	cfg.Pods = []PodConfig{{ID: "a", Address: a.addr(), KVBlocks: 1000}}
	c := startCell(t, cfg)
	code, body := get(t, "http://"+c.HTTPAddr()+"/v1/cell/state")
	if code != 200 || !strings.Contains(body, `"engineLoad":[]`) {
		t.Fatalf("/v1/cell/state = %d %s, want an empty engineLoad", code, body)
	}
	_, metrics := get(t, "http://"+c.HTTPAddr()+"/metrics")
	if strings.Contains(metrics, "cellrouter_engine_metrics") {
		t.Fatal("engine metrics exported while disabled")
	}
}

// TestExampleConfigEngineMetrics checks that the example documents every
// engine_metrics field, at its default.
func TestExampleConfigEngineMetrics(t *testing.T) {
	data, err := os.ReadFile("testdata/celld.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		EngineMetrics map[string]any `yaml:"engine_metrics"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(enginemetrics.Config{})
	for i := range typ.NumField() {
		if key := typ.Field(i).Tag.Get("yaml"); raw.EngineMetrics[key] == nil {
			t.Errorf("the example's engine_metrics section does not document %q", key)
		}
	}
	cfg, err := LoadConfig("testdata/celld.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := enginemetrics.DefaultConfig()
	want.Names = map[string]string{}
	if !reflect.DeepEqual(cfg.EngineMetrics, want) {
		t.Errorf("engine_metrics: got %+v, want the defaults %+v", cfg.EngineMetrics, want)
	}
}
