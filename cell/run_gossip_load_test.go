package cell

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/gossip"
)

// TestGossipedLoadNamesTheLightestPods: the load a cell gossips carries
// its totals, its least loaded pod and its gossip.LightestPods least loaded
// pods' active blocks, ascending, counting the idle pods at zero.
func TestGossipedLoadNamesTheLightestPods(t *testing.T) {
	cfg := testConfig()
	for i := range 12 {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: fmt.Sprintf("pod-%02d", i), Address: fmt.Sprintf("127.0.0.1:%d", 20000+i), KVBlocks: 1000})
	}
	c, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	// Pods 0..9 carry 10*(10-i) blocks each; pods 10 and 11 are idle.
	for i := range 10 {
		c.router.tracker.Start(fmt.Sprintf("pod-%02d", i), 10*(10-i), 0, "")
	}
	l := c.cellLoad()
	want := []int{0, 0, 10, 20, 30, 40, 50, 60}
	if got := l.Lightest[:l.NLightest]; !slices.Equal(got, want) || l.NLightest != gossip.LightestPods {
		t.Fatalf("lightest pods %v, want %v", got, want)
	}
	if l.LeastPodBlocks != 0 || l.Pods != 12 || l.ActiveRequests != 10 || l.ActiveBlocks != 550 || l.FreeBlocks != 12000-550 {
		t.Fatalf("load %+v, want least 0, 12 pods, 10 requests, 550 active blocks, 11450 free", l)
	}
}
