package overhead

import (
	"context"
	"testing"
	"time"
)

// consistent reports whether a side's percentiles are positive and ordered.
func consistent(s Side) bool { return s.P50Ms > 0 && s.P90Ms >= s.P50Ms && s.P99Ms >= s.P90Ms }

func TestRunSmall(t *testing.T) {
	for _, prompt := range []string{PromptTokens, PromptText, PromptChat} {
		t.Run(prompt, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Requests, cfg.Warmup, cfg.Pods, cfg.Prompt = 20, 2, 3, prompt
			cfg.Global = prompt == PromptText
			cfg.Picker = prompt == PromptTokens
			cfg.TLS = cfg.Global
			cfg.Path = cfg.Global
			cfg.Concurrency, cfg.RampRates, cfg.RampStep, cfg.CPURate, cfg.CPUStep = []int{1, 4}, []float64{50, 100}, 200*time.Millisecond, 200, 100*time.Millisecond
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
			checkPicker(t, rep, cfg)
			if !cfg.Global {
				if rep.GlobalTier != nil || rep.Path != nil || rep.Global != nil {
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
			checkPath(t, rep, cfg)
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

// checkPath checks the whole-path report: every level and tier, the
// headline taken from concurrency 1, the ramp and the CPU cost.
func checkPath(t *testing.T, rep *Report, cfg Config) {
	t.Helper()
	p, g := rep.Path, rep.Global
	if p == nil || g == nil {
		t.Fatal("no path report with Config.Path")
	}
	if len(p.Levels) != 2*len(cfg.Concurrency) {
		t.Fatalf("got %d levels, want %d", len(p.Levels), 2*len(cfg.Concurrency))
	}
	for _, l := range p.Levels {
		if !consistent(l.Pod) || !consistent(l.Cell) || !consistent(l.Global) || !consistent(l.GlobalProbed) {
			t.Errorf("level %+v: inconsistent percentiles", l)
		}
		if l.BothAdded.P99Ms != l.Global.P99Ms-l.Pod.P99Ms || l.CellAdded.P50Ms != l.Cell.P50Ms-l.Pod.P50Ms ||
			l.GlobalAdded.P50Ms != l.Global.P50Ms-l.Cell.P50Ms || l.ProbeAdded.P99Ms != l.GlobalProbed.P99Ms-l.Global.P99Ms {
			t.Errorf("level %+v: added latencies are not the differences", l)
		}
		if l.Concurrency == 1 && !l.Streaming && (g.OverheadP50Ms != l.BothAdded.P50Ms || g.OverheadP99Ms != l.BothAdded.P99Ms) {
			t.Errorf("global headline %+v does not mirror concurrency 1, non-streaming %+v", g, l.BothAdded)
		}
	}
	for _, tier := range pathTiers {
		steps := p.Ramp[tier]
		if len(steps) == 0 || len(steps) > len(cfg.RampRates) {
			t.Fatalf("tier %s: %d ramp steps, want 1..%d", tier, len(steps), len(cfg.RampRates))
		}
		for i, s := range steps {
			if s.Rate != cfg.RampRates[i] || (s.Errors == 0 && s.Dropped == 0 && !consistent(s.Tier)) {
				t.Errorf("tier %s step %d: %+v", tier, i, s)
			}
			if s.Sustained && (i == 0 || steps[i-1].Sustained) && p.MaxRPS[tier] < s.Rate {
				t.Errorf("tier %s sustained %v (and every lower rate) but max_rps is %v", tier, s.Rate, p.MaxRPS[tier])
			}
			if s.Errors == 0 && p.PeakRPS[tier] < s.Achieved {
				t.Errorf("tier %s achieved %v but peak_rps is %v", tier, s.Achieved, p.PeakRPS[tier])
			}
		}
		if p.CPU.ByTierUs[tier] <= 0 {
			t.Errorf("tier %s: CPU per request %v", tier, p.CPU.ByTierUs[tier])
		}
	}
	if g.MaxRPS != p.MaxRPS[TierGlobal] || g.PeakRPS != p.PeakRPS[TierGlobal] || g.CPUUsPerRequest != p.CPU.BothUs {
		t.Errorf("global headline %+v does not mirror the path", g)
	}
}

// checkPicker checks the picker report: present only with Config.Picker,
// every side's percentiles, the overheads the differences from the pod,
// and a CPU figure for every path.
func checkPicker(t *testing.T, rep *Report, cfg Config) {
	t.Helper()
	pk := rep.Picker
	if !cfg.Picker {
		if pk != nil {
			t.Fatalf("picker measured without Config.Picker")
		}
		return
	}
	if pk == nil || pk.Requests != cfg.Requests {
		t.Fatalf("picker report %+v, want one of %d requests", pk, cfg.Requests)
	}
	for _, sides := range []map[string]Side{pk.NonStreaming, pk.Streaming} {
		for _, side := range pickerSides {
			if !consistent(sides[side]) {
				t.Errorf("picker side %s: inconsistent %+v", side, sides[side])
			}
		}
	}
	ns := pk.NonStreaming
	if pk.OverheadP50Ms != ns[SidePicker].P50Ms-ns[SidePod].P50Ms || pk.OverheadP99Ms != ns[SidePicker].P99Ms-ns[SidePod].P99Ms ||
		pk.ProxyOverheadP50Ms != ns[SideProxy].P50Ms-ns[SidePod].P50Ms ||
		pk.StreamingOverheadP99Ms != pk.Streaming[SidePicker].P99Ms-pk.Streaming[SidePod].P99Ms {
		t.Errorf("picker overheads are not the differences from the pod: %+v", pk)
	}
	for _, side := range pickerSides {
		if pk.CPUByPathUs[side] <= 0 {
			t.Errorf("picker CPU of the %s path: %v", side, pk.CPUByPathUs[side])
		}
	}
	if pk.CPUUsPerRequest != pk.CPUByPathUs[SidePicker]-pk.CPUByPathUs[SidePod] ||
		pk.ProxyCPUUsPerRequest != pk.CPUByPathUs[SideProxy]-pk.CPUByPathUs[SidePod] {
		t.Errorf("picker CPU per request is not the difference from the pod path: %+v", pk)
	}
	if pk.DecisionCPUUsPerRequest != pk.CPUByPathUs[SidePicker]-pk.CPUByPathUs[SideFixedPicker] ||
		pk.DecisionP50Ms != ns[SidePicker].P50Ms-ns[SideFixedPicker].P50Ms {
		t.Errorf("the decision's share is not picker minus the fixed picker: %+v", pk)
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
		func(c *Config) { c.Global, c.TLS, c.Path = false, false, true },
		func(c *Config) { c.Concurrency = []int{0} },
		func(c *Config) { c.RampRates = []float64{200, 100} },
		func(c *Config) { c.RampStep = 0 },
		func(c *Config) { c.CPURate = 0 },
		func(c *Config) { c.CPUStep = 0 },
	} {
		c := DefaultConfig()
		mod(&c)
		if c.Validate() == nil {
			t.Errorf("Validate accepted %+v", c)
		}
	}
}
