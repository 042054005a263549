package global

import (
	"fmt"
	"slices"
	"time"

	"github.com/cellrouter/cellrouter/gossip"
)

// BandsConfig says how the global tier uses the band waits the cells
// gossip (gossip.BandWaits: how long a new request of each priority band
// would wait in a cell's flow control before it reaches a pod).
type BandsConfig struct {
	// WaitWeight is the cost of one millisecond a request would wait at a
	// cell for its band, in blocks, as RTTWeight is of a millisecond of
	// round trip: a cell that makes the request wait must save that much
	// prefill to be chosen. 0 ignores the waits in the choice. Default 1.
	WaitWeight float64
	// ShedAfter refuses a sheddable request with 429 before the hand-off
	// when every usable cell announces a wait above it for the sheddable
	// band. Default 0 (any wait); negative never refuses.
	ShedAfter time.Duration
	// MaxAge is how long a cell's announced waits count: a cell that has
	// not refreshed them for longer (it stopped waiting and the message
	// saying so was lost, or it runs an earlier version) is taken to wait
	// for nothing. Default 10s: several summary intervals.
	MaxAge time.Duration
}

// DefaultBandsConfig weighs a millisecond of wait as one block and sheds
// sheddable work when every cell would queue it.
func DefaultBandsConfig() BandsConfig {
	return BandsConfig{WaitWeight: 1, ShedAfter: 0, MaxAge: 10 * time.Second}
}

// Validate names the first bad field and its value.
func (c BandsConfig) Validate() error {
	switch {
	case c.WaitWeight < 0:
		return fmt.Errorf("%w: bands.wait_weight = %v: must not be negative", ErrInvalidConfig, c.WaitWeight)
	case c.MaxAge <= 0:
		return fmt.Errorf("%w: bands.max_age = %v: must be positive", ErrInvalidConfig, c.MaxAge)
	}
	return nil
}

// waitOf returns how long a request of band b would wait at the cell v as
// of now: its announced wait, or zero when the announcement is older than
// maxAge (or there is none).
func waitOf(v *CellView, b gossip.Band, now time.Time, maxAge time.Duration) time.Duration {
	if v.WaitsAt.IsZero() || now.Sub(v.WaitsAt) > maxAge {
		return 0
	}
	return v.Load.Waits.Of(b)
}

// waitCost is the cost term the choice adds for a cell's wait: WaitWeight
// per millisecond.
func waitCost(cfg BandsConfig, wait time.Duration) float64 {
	return cfg.WaitWeight * float64(wait) / float64(time.Millisecond)
}

// chargeWaits sets each answer's WaitCost for a request of band b, before
// Choose orders them. It is pure.
func chargeWaits(cfg BandsConfig, answers []ProbeAnswer, views []CellView, b gossip.Band, now time.Time) {
	for i := range answers {
		a := &answers[i]
		a.WaitCost = waitCost(cfg, waitOf(&views[a.Cell], b, now, cfg.MaxAge))
	}
}

// preferReady reorders the cells of an unprobed order (cold prompts, whose
// order is a stable hash's) so that those that can take a request of band b
// now come first, in their order, then those that would make it wait, the
// shortest wait first. It reorders order in place and returns it.
func preferReady(cfg BandsConfig, order []int, views []CellView, b gossip.Band, now time.Time) []int {
	if cfg.WaitWeight == 0 {
		return order
	}
	slices.SortStableFunc(order, func(x, y int) int {
		wx, wy := waitOf(&views[x], b, now, cfg.MaxAge), waitOf(&views[y], b, now, cfg.MaxAge)
		switch {
		case wx < wy:
			return -1
		case wx > wy:
			return 1
		}
		return 0
	})
	return order
}

// saturatedFor reports whether every usable cell would make a request of
// band b wait longer than cfg.ShedAfter, and if so the shortest of those
// waits (what the client is told to wait before retrying). A fleet with no
// usable cell is not saturated: the request fails as unroutable instead.
func saturatedFor(cfg BandsConfig, views []CellView, b gossip.Band, now time.Time) (bool, time.Duration) {
	if cfg.ShedAfter < 0 {
		return false, 0
	}
	least, usable := time.Duration(-1), false
	for i := range views {
		v := &views[i]
		if !v.usable() {
			continue
		}
		usable = true
		w := waitOf(v, b, now, cfg.MaxAge)
		if w <= cfg.ShedAfter {
			return false, 0
		}
		if least < 0 || w < least {
			least = w
		}
	}
	return usable, max(least, 0)
}
