package overhead

import (
	"context"
	"testing"
)

// consistent reports whether a side's percentiles are positive and ordered.
func consistent(s Side) bool { return s.P50Ms > 0 && s.P90Ms >= s.P50Ms && s.P99Ms >= s.P90Ms }

func TestRunSmall(t *testing.T) {
	for _, prompt := range []string{PromptTokens, PromptText, PromptChat} {
		t.Run(prompt, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Requests, cfg.Warmup, cfg.Pods, cfg.Prompt = 20, 2, 3, prompt
			cfg.Global = prompt == PromptText
			cfg.TLS = cfg.Global
			rep, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range []Mode{rep.NonStreaming, rep.Streaming} {
				if !consistent(m.Direct) || !consistent(m.Cell) {
					t.Fatalf("inconsistent percentiles: %+v", m)
				}
			}
			if rep.CellP99Ms != rep.NonStreaming.Cell.P99Ms || rep.OverheadP99Ms != rep.NonStreaming.OverheadP99Ms {
				t.Fatalf("top-level fields do not mirror the non-streaming mode: %+v", rep)
			}
			if rep.Prompt != prompt {
				t.Fatalf("report prompt %q, want %q", rep.Prompt, prompt)
			}
			if !cfg.Global {
				if rep.GlobalTier != nil {
					t.Fatalf("global tier measured without Config.Global")
				}
				return
			}
			g := rep.GlobalTier
			if g == nil {
				t.Fatal("no global tier report")
			}
			for name, m := range map[string]GlobalMode{"tokens": g.Tokens, "text": g.Text, "chat": g.Chat, "text_remote": g.TextRemote, "chat_remote": g.ChatRemote} {
				if !consistent(m.Cell) || !consistent(m.Global) || m.AddedP50Ms != m.Global.P50Ms-m.Cell.P50Ms {
					t.Errorf("%s: inconsistent %+v", name, m)
				}
			}
			for _, k := range []string{"text", "chat", "text_remote", "chat_remote"} {
				if c, ok := g.Tokenize[k]; !ok || c.P50Us <= 0 || c.P99Us < c.P50Us {
					t.Errorf("tokenize cost %s = %+v, %v", k, c, ok)
				}
			}
			// Every chat's system message is one cached segment.
			if g.CacheHitRatio <= 0 || g.PromptTokens < cfg.PromptTokens {
				t.Errorf("cache hit ratio %v, prompt tokens %d", g.CacheHitRatio, g.PromptTokens)
			}
			h := rep.TLSHop
			if h == nil {
				t.Fatal("no TLS hop report with Config.TLS")
			}
			if !consistent(h.Plain.Global) || !consistent(h.MutualTLS.Global) || h.Plain.Cell != h.MutualTLS.Cell ||
				h.AddedP50Ms != h.MutualTLS.Global.P50Ms-h.Plain.Global.P50Ms {
				t.Errorf("inconsistent TLS hop report %+v", h)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	for _, mod := range []func(*Config){
		func(c *Config) { c.Requests = 1 },
		func(c *Config) { c.Pods = 0 },
		func(c *Config) { c.Chunks = 0 },
		func(c *Config) { c.PromptTokens = 0 },
		func(c *Config) { c.Warmup = -1 },
		func(c *Config) { c.Prompt = "image" },
		func(c *Config) { c.Global, c.TLS = false, true },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
}
