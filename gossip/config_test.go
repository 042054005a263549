package gossip

import (
	"strings"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	valid := func() Config {
		c := DefaultConfig()
		c.NodeName, c.Role, c.CellID = "n1", RoleCell, "cell-1"
		return c
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("valid config: Validate() = %v, want nil", err)
	}
	tests := []struct {
		name  string
		mod   func(*Config)
		field string
	}{
		{"no name", func(c *Config) { c.NodeName = "" }, "NodeName"},
		{"no bind addr", func(c *Config) { c.BindAddr = "" }, "BindAddr"},
		{"port", func(c *Config) { c.BindPort = 70000 }, "BindPort"},
		{"advertise port", func(c *Config) { c.AdvertisePort = -1 }, "AdvertisePort"},
		{"advertise addr", func(c *Config) { c.AdvertiseAddr = "host.example" }, "AdvertiseAddr"},
		{"key length", func(c *Config) { c.SecretKey = []byte("short") }, "SecretKey"},
		{"extra key without key", func(c *Config) { c.ExtraKeys = [][]byte{make([]byte, 16)} }, "ExtraKeys"},
		{"extra key length", func(c *Config) { c.SecretKey = make([]byte, 16); c.ExtraKeys = [][]byte{make([]byte, 5)} }, "ExtraKeys[0]"},
		{"gossip interval", func(c *Config) { c.GossipInterval = 0 }, "GossipInterval"},
		{"gossip nodes", func(c *Config) { c.GossipNodes = 0 }, "GossipNodes"},
		{"probe interval", func(c *Config) { c.ProbeInterval = 0 }, "ProbeInterval"},
		{"probe timeout", func(c *Config) { c.ProbeTimeout = c.ProbeInterval }, "ProbeTimeout"},
		{"suspicion", func(c *Config) { c.SuspicionMult = 0 }, "SuspicionMult"},
		{"push pull", func(c *Config) { c.PushPullInterval = -time.Second }, "PushPullInterval"},
		{"tcp timeout", func(c *Config) { c.TCPTimeout = 0 }, "TCPTimeout"},
		{"leave timeout", func(c *Config) { c.LeaveTimeout = 0 }, "LeaveTimeout"},
		{"resync", func(c *Config) { c.ResyncInterval = 0 }, "ResyncInterval"},
		{"dead retention", func(c *Config) { c.DeadRetention = -1 }, "DeadRetention"},
		{"seed", func(c *Config) { c.Seeds = []string{"nohostport"} }, "Seeds[0]"},
		{"role", func(c *Config) { c.Role = 0 }, "Role"},
		{"cell without id", func(c *Config) { c.CellID = "" }, "cell id"},
		{"http addr", func(c *Config) { c.HTTPAddr = "bad" }, "HTTPAddr"},
		{"long cell id", func(c *Config) { c.CellID = strings.Repeat("x", MaxCellIDLen+1) }, "cell id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := valid()
			tc.mod(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
}

func TestRoleAndStateStrings(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{RoleCell.String(), "cell"}, {RoleGlobal.String(), "global"}, {Role(9).String(), "role(9)"},
		{StateAlive.String(), "alive"}, {StateSuspect.String(), "suspect"}, {StateDead.String(), "dead"},
		{EventJoin.String(), "join"}, {EventLeave.String(), "leave"}, {EventUpdate.String(), "update"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	for _, s := range []string{"cell", "global"} {
		r, err := ParseRole(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRole(%q) = %v, %v; want %s", s, r, err, s)
		}
	}
	if _, err := ParseRole("router"); err == nil {
		t.Errorf("ParseRole(router) = nil error, want an error")
	}
}
