package enginesim

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: got %v, want valid", err)
	}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"id with @", func(c *Config) { c.ID = "a@b" }, "Config.ID"},
		{"no model", func(c *Config) { c.Model = "" }, "Config.Model"},
		{"role", func(c *Config) { c.Role = "mixed" }, "Config.Role"},
		{"block size", func(c *Config) { c.BlockSize = 0 }, "Config.BlockSize"},
		{"blocks", func(c *Config) { c.Blocks = 0 }, "Config.Blocks"},
		{"max model len", func(c *Config) { c.MaxModelLen = 1 }, "Config.MaxModelLen"},
		{"vocab", func(c *Config) { c.Vocab = 10 }, "Config.Vocab"},
		{"max running", func(c *Config) { c.MaxRunning = 0 }, "Config.MaxRunning"},
		{"default max tokens", func(c *Config) { c.DefaultMaxTokens = 0 }, "Config.DefaultMaxTokens"},
		{"prefill", func(c *Config) { c.PrefillPerToken = -1 }, "Config.PrefillPerToken"},
		{"decode", func(c *Config) { c.DecodePerToken = -1 }, "Config.DecodePerToken"},
		{"time scale", func(c *Config) { c.TimeScale = -1 }, "Config.TimeScale"},
		{"chunk", func(c *Config) { c.TokensPerChunk = 0 }, "Config.TokensPerChunk"},
		{"body", func(c *Config) { c.MaxBodyBytes = 0 }, "Config.MaxBodyBytes"},
		{"endpoint", func(c *Config) { c.Events.Endpoint = "localhost:5557" }, "Config.Events.Endpoint"},
		{"replay", func(c *Config) { c.Events.ReplayEndpoint = "x" }, "Config.Events.ReplayEndpoint"},
		{"form", func(c *Config) { c.Events.Form = 0x80 }, "Config.Events.Form"},
		{"buffer", func(c *Config) { c.Events.BufferSize = 0 }, "Config.Events.BufferSize"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "enginesim: ") {
				t.Errorf("got %v, want an enginesim error naming %s", err, tc.want)
			}
		})
	}
	c := DefaultConfig()
	c.Events.Disabled, c.Events.Endpoint = true, ""
	if err := c.Validate(); err != nil {
		t.Errorf("disabled events with no endpoint: got %v, want valid", err)
	}
}

func TestFleetConfigValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*FleetConfig)
		want   string
	}{
		{"pods", func(c *FleetConfig) { c.Pods = 0 }, "FleetConfig.Pods"},
		{"too many pods", func(c *FleetConfig) { c.Pods = 257 }, "FleetConfig.Pods"},
		{"roles length", func(c *FleetConfig) { c.Roles = []Role{RolePrefill} }, "FleetConfig.Roles"},
		{"role", func(c *FleetConfig) { c.Roles = []Role{RoleBoth, RoleBoth, "x", RoleBoth} }, "FleetConfig.Roles[2]"},
		{"base port", func(c *FleetConfig) { c.BasePort = 65530 }, "FleetConfig.BasePort"},
		{"pod", func(c *FleetConfig) { c.Pod.Blocks = 0 }, "Config.Blocks"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultFleetConfig()
			tc.mutate(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %s", err, tc.want)
			}
		})
	}
}

// TestFleetPodConfig checks the per-pod ids, roles and fixed ports.
func TestFleetPodConfig(t *testing.T) {
	c := DefaultFleetConfig()
	c.Pod.ID = "sim"
	c.Roles = []Role{RolePrefill, RoleDecode, RoleBoth, RoleBoth}
	c.BasePort = 20000
	pc := c.podConfig(1)
	if pc.ID != "sim-1" || pc.Role != RoleDecode || pc.HTTPAddr != "127.0.0.1:20003" ||
		pc.Events.Endpoint != "tcp://127.0.0.1:20004" || pc.Events.ReplayEndpoint != "tcp://127.0.0.1:20005" {
		t.Errorf("got pod 1 config id %q role %q http %q pub %q replay %q, want sim-1 decode 127.0.0.1:20003 :20004 :20005",
			pc.ID, pc.Role, pc.HTTPAddr, pc.Events.Endpoint, pc.Events.ReplayEndpoint)
	}
}
