package cell

import (
	"time"

	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// BandWaitFunc says how long a new request of a priority band would wait
// in the cell's flow control before it reaches a pod (zero: admitted at
// once), such as flowcontrol.Controller.WaitEstimate. It is called from
// the gossip loop, concurrently with requests, and must not block.
type BandWaitFunc func(auth.Priority) time.Duration

// SetBandWaits sets where the waits the cell gossips per band come from
// (nil: every band announces zero wait). The global tier prefers cells
// that can take a request of its band now and refuses sheddable requests
// when every cell would queue them. Safe to call at any time.
func (c *Cell) SetBandWaits(f BandWaitFunc) {
	if f == nil {
		c.bandWaits.Store(nil)
		return
	}
	c.bandWaits.Store(&f)
}

// bandLoad fills l.Waits from the provider SetBandWaits set.
func (c *Cell) bandLoad(l *gossip.Load) {
	l.Waits = gossip.BandWaits{}
	f := c.bandWaits.Load()
	if f == nil {
		return
	}
	for _, p := range auth.Priorities() {
		l.Waits[gossip.BandOf(p)] = max((*f)(p), 0)
	}
}
