package hierarchy

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // substring of the error; empty for valid
	}{
		{"default", func(*Config) {}, ""},
		{"quick", func(c *Config) { *c = QuickConfig() }, ""},
		{"no trace", func(c *Config) { c.TracePath = "" }, "TracePath"},
		{"negative max requests", func(c *Config) { c.MaxRequests = -1 }, "MaxRequests"},
		{"no cells", func(c *Config) { c.Cells = 0 }, "Cells must be >= 1"},
		{"no pods", func(c *Config) { c.PodsPerCell = 0 }, "PodsPerCell"},
		{"too many pods", func(c *Config) { c.Cells, c.PodsPerCell = 9, 32 }, "Cells*PodsPerCell must be <= 256"},
		{"block size not dividing 512", func(c *Config) { c.BlockSize = 24 }, "BlockSize must divide 512"},
		{"zero block size", func(c *Config) { c.BlockSize = 0 }, "BlockSize"},
		{"no cache", func(c *Config) { c.BlocksPerPod = 0 }, "BlocksPerPod"},
		{"zero interval", func(c *Config) { c.SummaryInterval = 0 }, "SummaryInterval"},
		{"no probes", func(c *Config) { c.MaxProbes = 0 }, "MaxProbes"},
		{"negative slack", func(c *Config) { c.ProbeSlack = -1 }, "ProbeSlack"},
		{"no cold blocks", func(c *Config) { c.ColdBlocks = 0 }, "ColdBlocks"},
		{"negative overlap", func(c *Config) { c.OverlapWeight = -1 }, "OverlapWeight"},
		{"negative temperature", func(c *Config) { c.Temperature = -0.5 }, "Temperature"},
		{"busy above 1", func(c *Config) { c.BusyThreshold = 1.5 }, "BusyThreshold"},
		{"negative decode", func(c *Config) { c.DecodeMsPerToken = -1 }, "DecodeMsPerToken"},
		{"bad stride", func(c *Config) { c.Stride = 0 }, "Stride"},
		{"bad fpr", func(c *Config) { c.FalsePositiveRate = 0.9 }, "FalsePositiveRate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.change(&c)
			err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate got %v, want an error containing %q", err, tt.want)
			case err != nil && !strings.HasPrefix(err.Error(), "hierarchy: "):
				t.Errorf("Validate got %q, want the prefix %q", err, "hierarchy: ")
			}
		})
	}
}
