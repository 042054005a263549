package overhead

import (
	"context"
	"testing"
)

func TestRunSmall(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Requests, cfg.Warmup, cfg.Pods = 20, 2, 3
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []Mode{rep.NonStreaming, rep.Streaming} {
		if m.Direct.P50Ms <= 0 || m.Cell.P50Ms <= 0 || m.Direct.P99Ms < m.Direct.P50Ms || m.Cell.P99Ms < m.Cell.P50Ms {
			t.Fatalf("inconsistent percentiles: %+v", m)
		}
	}
	if rep.CellP99Ms != rep.NonStreaming.Cell.P99Ms || rep.OverheadP99Ms != rep.NonStreaming.OverheadP99Ms {
		t.Fatalf("top-level fields do not mirror the non-streaming mode: %+v", rep)
	}
}

func TestValidate(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Requests = 1 },
		func(c *Config) { c.Pods = 0 },
		func(c *Config) { c.Chunks = 0 },
		func(c *Config) { c.PromptTokens = 0 },
		func(c *Config) { c.Warmup = -1 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
}
