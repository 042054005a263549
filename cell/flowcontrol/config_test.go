package flowcontrol

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"queue", func(c *Config) { c.MaxQueued = 0 }, "flow_control.max_queued = 0"},
		{"deadline", func(c *Config) { c.DefaultDeadline = 0 }, "flow_control.default_deadline = 0s"},
		{"depth", func(c *Config) { c.QueueDepthThreshold = -1 }, "flow_control.queue_depth_threshold = -1"},
		{"blocks", func(c *Config) { c.ActiveBlocksThreshold = 1.5 }, "flow_control.active_blocks_threshold = 1.5"},
		{"inflight", func(c *Config) { c.MaxInflightPerPod = -2 }, "flow_control.max_inflight_per_pod = -2"},
		{"recheck", func(c *Config) { c.RecheckInterval = -time.Second }, "flow_control.recheck_interval = -1s"},
		{"estimate", func(c *Config) { c.OutputTokensEstimate = -1 }, "flow_control.output_tokens_estimate = -1"},
		{"engine", func(c *Config) { c.EngineMaxRunning = -1 }, "flow_control.engine_max_running = -1"},
		{"prefill", func(c *Config) { c.PrefillPerBlock = -time.Millisecond }, "flow_control.prefill_per_block = -1ms"},
	} {
		c := DefaultConfig()
		tc.mod(&c)
		if err := c.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

func TestBindFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	apply := BindFlags(fs)
	if err := fs.Parse([]string{"--flow-control=false", "--flow-max-queued=7", "--flow-default-deadline=3s", "--flow-max-inflight-per-pod=4",
		"--flow-affinity-wait=false", "--flow-engine-max-running=256"}); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.QueueDepthThreshold = 99 // from a file: a flag not given leaves it
	apply(&c)
	if c.Enabled || c.MaxQueued != 7 || c.DefaultDeadline != 3*time.Second || c.MaxInflightPerPod != 4 || c.QueueDepthThreshold != 99 ||
		c.AffinityWait || c.EngineMaxRunning != 256 {
		t.Errorf("got %+v", c)
	}
}

func TestParseTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"", 0, true}, {"2.5s", 2500 * time.Millisecond, true}, {"30", 30 * time.Second, true}, {" 800ms ", 800 * time.Millisecond, true},
		{"0", 0, false}, {"-1s", 0, false}, {"soon", 0, false}, {"NaN", 0, false}, {"+Inf", 0, false}, {"1e300", MaxTimeout, true}, {"1e-12", 0, false},
		{"9999h", MaxTimeout, true},
	} {
		got, err := ParseTimeout(tc.in)
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("ParseTimeout(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// FuzzParseTimeout checks that no header panics the parser, that an
// accepted value is a positive duration no longer than MaxTimeout, and
// that every refusal is ErrTimeoutHeader.
func FuzzParseTimeout(f *testing.F) {
	for _, s := range []string{"", "2s", "30", "0.5", "-3", "1e400", "1h1h", "\x00", "9223372036854775807ns", "0x10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseTimeout(s)
		if err != nil {
			if !errors.Is(err, ErrTimeoutHeader) || d != 0 {
				t.Fatalf("ParseTimeout(%q) = %v, %v", s, d, err)
			}
			return
		}
		if strings.TrimSpace(s) == "" {
			if d != 0 {
				t.Fatalf("empty header: got %v", d)
			}
			return
		}
		if d <= 0 || d > MaxTimeout {
			t.Fatalf("ParseTimeout(%q) = %v: out of (0, %v]", s, d, MaxTimeout)
		}
	})
}
