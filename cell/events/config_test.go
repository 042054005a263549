package events

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string // a substring naming the field; "" for valid
	}{
		{"default", func(*Config) {}, ""},
		{"block size 0", func(c *Config) { c.BlockSize = 0 }, "BlockSize 0"},
		{"block size huge", func(c *Config) { c.BlockSize = 1 << 20 }, "BlockSize 1048576"},
		{"max blocks 0", func(c *Config) { c.MaxBlocksPerPod = 0 }, "MaxBlocksPerPod 0"},
		{"max index blocks 0", func(c *Config) { c.MaxIndexBlocksPerPod = 0 }, "MaxIndexBlocksPerPod 0"},
		{"pod max index blocks negative", func(c *Config) { c.Pods = []PodSpec{{ID: "a", MaxIndexBlocks: -1}} }, "Pods[0].MaxIndexBlocks -1"},
		{"dead after 0", func(c *Config) { c.DeadAfter = 0 }, "DeadAfter 0s"},
		{"empty model", func(c *Config) { c.Models = []string{"m", ""} }, "Models[1]"},
		{"empty pod id", func(c *Config) { c.Pods = []PodSpec{{}} }, "Pods[0].ID"},
		{"duplicate pod", func(c *Config) { c.Pods = []PodSpec{{ID: "a"}, {ID: "a"}} }, `Pods[1].ID "a"`},
		{"bad role", func(c *Config) { c.Pods = []PodSpec{{ID: "a", Role: "both!"}} }, `Pods[0].Role "both!"`},
		{"good pods", func(c *Config) {
			c.Pods = []PodSpec{{ID: "a", Role: RolePrefill}, {ID: "b", Role: RoleDecode}, {ID: "c"}}
			c.DeadAfter = time.Minute
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("got error %v, want none", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "events: ")):
				t.Fatalf("got error %v, want one starting with events: and naming %q", err, tc.wantErr)
			}
		})
	}
}

func TestLagHistogram(t *testing.T) {
	var h LagHistogram
	if got := h.Quantile(0.5); got != -1 {
		t.Fatalf("got %v on an empty histogram, want -1", got)
	}
	for _, d := range []time.Duration{-time.Millisecond, 3 * time.Millisecond, 3 * time.Millisecond, 40 * time.Millisecond, time.Minute} {
		h.Observe(d)
	}
	tests := []struct {
		q    float64
		want time.Duration
	}{{0.2, time.Millisecond}, {0.5, 5 * time.Millisecond}, {0.8, 50 * time.Millisecond}, {1, -1}}
	for _, tc := range tests {
		if got := h.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v): got %v, want %v", tc.q, got, tc.want)
		}
	}
	if h.Negative.Load() != 1 || h.Count.Load() != 5 {
		t.Errorf("got negative %d count %d, want 1 and 5", h.Negative.Load(), h.Count.Load())
	}
}
