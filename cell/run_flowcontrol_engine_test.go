package cell

import (
	"fmt"
	"testing"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/cell/podset"
)

func TestEngineEstimate(t *testing.T) {
	for _, tc := range []struct {
		u           load.Usage
		maxRunning  int
		wantWaiting int
		wantHeld    float64
	}{
		{load.Usage{}, 4, 0, 0},
		{load.Usage{Requests: 3, Blocks: 3000}, 4, 0, 3000},
		{load.Usage{Requests: 4, Blocks: 4000}, 4, 0, 4000},
		{load.Usage{Requests: 10, Blocks: 10000}, 4, 6, 4000},
		{load.Usage{Requests: 12, Blocks: 6000}, 8, 4, 4000},
	} {
		waiting, held := engineEstimate(tc.u, tc.maxRunning)
		if waiting != tc.wantWaiting || held != tc.wantHeld {
			t.Errorf("engineEstimate(%+v, %d) = %d, %v; want %d, %v", tc.u, tc.maxRunning, waiting, held, tc.wantWaiting, tc.wantHeld)
		}
	}
}

// TestSaturationEstimatesTheEngine checks the router's own estimate of a
// pod's engine (flow_control.engine_max_running) against the plain
// reading: long prompts waiting in the engine's queue hold no KV blocks,
// so they no longer saturate a pod whose engine has free slots, and the
// queue the cell's own requests make counts against
// queue_depth_threshold.
func TestSaturationEstimatesTheEngine(t *testing.T) {
	sat := func(maxRunning int, reqs, blocksEach int) bool {
		tr := load.NewTracker()
		for range reqs {
			tr.Start("p", blocksEach, 0, "")
		}
		cfg := flowcontrol.DefaultConfig() // 8 waiting, 95% of the blocks
		cfg.EngineMaxRunning = maxRunning
		s := &podSaturation{cfg: cfg, tracker: tr, blockSize: 16,
			pods: podset.New([]podset.Pod{{ID: "p", Address: "127.0.0.1:1", KVBlocks: 10000, Routable: true}})}
		return s.Saturated("p", 0)
	}
	for _, tc := range []struct {
		maxRunning, reqs, blocksEach int
		want                         bool
	}{
		// Unknown engine: every routed block counts as held.
		{0, 3, 3200, true},   // 9,600 of 10,000 blocks
		{0, 30, 100, false},  // 3,000 blocks, however many requests
		{4, 3, 3200, true},   // all three run: their blocks are held
		{4, 6, 1600, false},  // 4 run (6,400 blocks), 2 wait holding none
		{4, 11, 900, false},  // 7 waiting, under 8
		{4, 12, 900, true},   // 8 waiting
		{4, 5, 2400, true},   // 4 running hold 9,600 blocks
		{64, 30, 100, false}, // a large batch: nothing waits
	} {
		t.Run(fmt.Sprintf("m%d-r%d-b%d", tc.maxRunning, tc.reqs, tc.blocksEach), func(t *testing.T) {
			if got := sat(tc.maxRunning, tc.reqs, tc.blocksEach); got != tc.want {
				t.Fatalf("Saturated = %v, want %v", got, tc.want)
			}
		})
	}
}
