package cell

import (
	"errors"
	"strings"
	"testing"
)

// TestGatewayAddress checks gossip.gateway_address: a dialable host:port
// reaches the gossip node's metadata, and what no gateway could be
// dialed at is refused, naming the key and the value.
func TestGatewayAddress(t *testing.T) {
	for _, tt := range []struct {
		name, addr string
		wantErr    bool
	}{
		{"unset", "", false},
		{"ip", "10.0.0.9:8081", false},
		{"name", "gw.cell-a.svc.cluster.local:80", false},
		{"ipv6", "[fd00::9]:8081", false},
		{"no port", "10.0.0.9", true},
		{"wildcard", "0.0.0.0:8081", true},
		{"empty host", ":8081", true},
		{"port 0", "10.0.0.9:0", true},
		{"too long", strings.Repeat("a", 130) + ":80", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Gossip.Bind, cfg.Gossip.GatewayAddress = "127.0.0.1:0", tt.addr
			err := cfg.Validate()
			if (err != nil) != tt.wantErr {
				t.Fatalf("Validate() = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "gossip.gateway_address") || !strings.Contains(err.Error(), tt.addr) {
					t.Fatalf("Validate() = %v, want ErrConfig naming gossip.gateway_address and %q", err, tt.addr)
				}
				return
			}
			g, err := cfg.gossipConfig("127.0.0.1:8080", "127.0.0.1:9090")
			if err != nil {
				t.Fatal(err)
			}
			if g.GatewayAddr != tt.addr {
				t.Fatalf("gossip GatewayAddr = %q, want %q", g.GatewayAddr, tt.addr)
			}
		})
	}
	cfg, err := ParseConfig([]byte("gossip: {bind: \"127.0.0.1:0\", gateway_address: \"10.1.2.3:8081\"}\n"))
	if err != nil || cfg.Gossip.GatewayAddress != "10.1.2.3:8081" {
		t.Fatalf("ParseConfig: gateway %q, %v; want 10.1.2.3:8081", cfg.Gossip.GatewayAddress, err)
	}
}
