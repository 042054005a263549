package cell

import (
	"errors"
	"strings"
	"testing"
)

// TestPodIndexBound checks where a pod's bound of indexed blocks comes
// from: max_index_blocks, else twice kv_blocks, else the events default
// (0 here), and that a bad max_index_blocks is refused by name.
func TestPodIndexBound(t *testing.T) {
	tests := []struct {
		name string
		pod  PodConfig
		want int
	}{
		{"nothing known", PodConfig{ID: "p"}, 0},
		{"from kv_blocks", PodConfig{ID: "p", KVBlocks: 500}, kvBoundFactor * 500},
		{"explicit", PodConfig{ID: "p", KVBlocks: 500, MaxIndexBlocks: 300}, 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.pod.indexBound(); got != tc.want {
				t.Errorf("indexBound() = %d, want %d", got, tc.want)
			}
			cfg := testConfig()
			cfg.Pods = []PodConfig{tc.pod}
			if got := cfg.eventsConfig().Pods[0].MaxIndexBlocks; got != tc.want {
				t.Errorf("eventsConfig().Pods[0].MaxIndexBlocks = %d, want %d", got, tc.want)
			}
		})
	}
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "p", MaxIndexBlocks: -1}}
	if err := cfg.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "pods[0].max_index_blocks = -1") {
		t.Errorf("Validate() = %v, want an error naming pods[0].max_index_blocks = -1", err)
	}
	cfg = testConfig()
	cfg.Events.MaxIndexBlocksPerPod = 0
	if err := cfg.Validate(); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "MaxIndexBlocksPerPod 0") {
		t.Errorf("Validate() = %v, want an error naming MaxIndexBlocksPerPod", err)
	}
	if d := DefaultConfig().Events.MaxIndexBlocksPerPod; d != 1<<18 {
		t.Errorf("default events.max_index_blocks_per_pod = %d, want %d", d, 1<<18)
	}
}
