package burst

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestRunSpeculativeBeatsExact sends bursts of 6 requests sharing a new
// 4096-token prefix (100 ms of prefill, longer than the 40 ms window) to 3
// pods. Without speculative entries no event arrives within the burst, so
// every pod prefills the prefix; with them the burst follows its first
// request. Each side is the median of three runs, so that a run whose first
// two decisions overlap on a loaded machine does not decide the test.
func TestRunSpeculativeBeatsExact(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Sizes, cfg.Window, cfg.Repeat = []int{6}, 40*time.Millisecond, 3
	cfg.Pods, cfg.BlocksPerPod, cfg.PrefixTokens, cfg.MaxRunning, cfg.MaxTokens = 3, 2048, 4096, 2, 4
	rep, err := Run(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(rep)
	var raw map[string]any
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	bursts, _ := raw["bursts"].([]any)
	if len(bursts) != 1 {
		t.Fatalf("got %d bursts, want 1: %s", len(bursts), data)
	}
	b := bursts[0].(map[string]any)
	for _, side := range []string{"speculative", "exact"} {
		r, ok := b[side].(map[string]any)
		if !ok {
			t.Fatalf("burst lacks %q: %s", side, data)
		}
		for _, k := range []string{"pods_prefilled", "prefill_tokens", "prefix_prefill_tokens", "pods_used", "latency_p50_ms"} {
			if _, ok := r[k].(float64); !ok {
				t.Errorf("%s lacks a numeric %s", side, k)
			}
		}
	}
	spec, exact := rep.Bursts[0].Speculative, rep.Bursts[0].Exact
	if spec.Errors+exact.Errors != 0 {
		t.Fatalf("got %d and %d errors, want none", spec.Errors, exact.Errors)
	}
	if exact.PodsPrefilled != 3 {
		t.Errorf("without speculative entries %d pods prefilled the prefix, want all 3 (runs %v)", exact.PodsPrefilled, exact.PodsPrefilledRuns)
	}
	if spec.PodsPrefilled >= exact.PodsPrefilled || spec.PrefillTokens >= exact.PrefillTokens {
		t.Errorf("speculative: %d pods prefilled, %d prefill tokens; exact: %d, %d; want fewer of both with speculative entries",
			spec.PodsPrefilled, spec.PrefillTokens, exact.PodsPrefilled, exact.PrefillTokens)
	}
	t.Logf("speculative runs %v %v, exact runs %v %v", spec.PodsPrefilledRuns, spec.PrefillTokensRuns, exact.PodsPrefilledRuns, exact.PrefillTokensRuns)
	if len(spec.PodsPrefilledRuns) != 3 {
		t.Errorf("got %d runs listed, want 3", len(spec.PodsPrefilledRuns))
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"no sizes", func(c *Config) { c.Sizes = nil }, "Sizes is empty"},
		{"bad size", func(c *Config) { c.Sizes = []int{8, 0} }, "Sizes has 0"},
		{"short prefix", func(c *Config) { c.PrefixTokens = 3 }, "PrefixTokens = 3"},
		{"pods", func(c *Config) { c.Pods = 0 }, "Pods = 0"},
		{"repeat", func(c *Config) { c.Repeat = 0 }, "Repeat = 0"},
		{"ttl", func(c *Config) { c.SpeculativeTTL = 0 }, "SpeculativeTTL"},
	}
	for _, tt := range tests {
		c := DefaultConfig()
		tt.edit(&c)
		err := c.Validate()
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	runs := []*Result{{PodsPrefilled: 3, PrefillTokens: 30}, {PodsPrefilled: 1, PrefillTokens: 10}, {PodsPrefilled: 2, PrefillTokens: 25}}
	m := median(runs)
	if m.PodsPrefilled != 2 || m.PrefillTokens != 25 {
		t.Errorf("got median %d pods, %d tokens; want 2, 25", m.PodsPrefilled, m.PrefillTokens)
	}
	if len(m.PodsPrefilledRuns) != 3 || m.PodsPrefilledRuns[0] != 3 {
		t.Errorf("got runs %v, want every run in order", m.PodsPrefilledRuns)
	}
	if one := median(runs[:1]); one.PodsPrefilledRuns != nil {
		t.Errorf("a single run lists runs %v, want none", one.PodsPrefilledRuns)
	}
}
