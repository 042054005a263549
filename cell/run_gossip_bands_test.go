package cell

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// TestGossipedBandWaits: the load a cell gossips carries, per band, the
// wait its provider says (the flow controller's estimate by default, zero
// while nothing is queued), each auth priority in its gossip band; a nil
// provider announces zero waits and a negative estimate counts as zero.
func TestGossipedBandWaits(t *testing.T) {
	cfg := testConfig()
	cfg.Pods = append(cfg.Pods, PodConfig{ID: "pod-0", Address: "127.0.0.1:20000", KVBlocks: 1000})
	c, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if w := c.cellLoad().Waits; !w.IsZero() {
		t.Fatalf("an idle cell's flow control announces waits %v, want zero", w)
	}
	c.SetBandWaits(func(p auth.Priority) time.Duration {
		switch p {
		case auth.PriorityCritical:
			return -time.Second
		case auth.PriorityStandard:
			return 20 * time.Millisecond
		}
		return 3 * time.Second
	})
	want := gossip.BandWaits{gossip.BandCritical: 0, gossip.BandStandard: 20 * time.Millisecond, gossip.BandSheddable: 3 * time.Second}
	if w := c.cellLoad().Waits; w != want {
		t.Fatalf("waits %v, want %v", w, want)
	}
	c.SetBandWaits(nil)
	if w := c.cellLoad().Waits; !w.IsZero() {
		t.Fatalf("with no provider: waits %v, want zero", w)
	}
}
