package cell

import (
	"errors"
	"strings"
	"testing"
)

// TestCostConfig checks routing.cost: the example documents the defaults
// and a bad field is named with its value.
func TestCostConfig(t *testing.T) {
	cfg, err := LoadConfig("testdata/celld.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := cfg.Routing.Cost, DefaultCostConfig(); got != want {
		t.Fatalf("example routing.cost %+v, want the defaults %+v", got, want)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"model: fastest", `routing.cost.model = "fastest"`},
		{"max_running: 0", "routing.cost.max_running = 0"},
		{"prefill_per_token_us: -1", "routing.cost.prefill_per_token_us = -1"},
		{"decode_per_token_ms: -2", "routing.cost.decode_per_token_ms = -2"},
		{"decode_tokens: -3", "routing.cost.decode_tokens = -3"},
	} {
		_, err := ParseConfig([]byte("cell_id: x\npods: [{id: a, address: '1.2.3.4:5'}]\nrouting: {cost: {" + tt.yaml + "}}\n"))
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("routing.cost {%s}: got %v, want an ErrConfig naming %s", tt.yaml, err, tt.want)
		}
	}
}
