package global

import (
	"sync"
	"time"
)

// distanceWindow is how many of a cell's recent probe round trips its
// distance is the least of.
const distanceWindow = 16

// distances keeps each cell's network distance for the choice: the least
// of its last distanceWindow probe round trips on an open connection.
//
// The choice charges a cell RTTWeight blocks per millisecond of the hop a
// hand-off to it will take. One probe's own round trip is a poor measure
// of that hop: on a busy router it includes the time the probe waited for
// a CPU, and the first probe to a cell also includes opening the
// connection (a TLS handshake). Either can outweigh a short prompt's whole
// prefix, which sent a chat's second turn away from the cell holding its
// first turn. The least of recent samples (a min filter, as congestion
// control estimates a path's base delay) follows the network distance and
// drops those spikes; a probe that had to open its connection is not a
// sample. A cell never measured is at distance zero: it is not charged for
// what nobody knows.
type distances struct {
	mu    sync.Mutex
	cells map[string]*distanceRing
}

type distanceRing struct {
	samples [distanceWindow]time.Duration
	n, next int
}

func newDistances() *distances { return &distances{cells: map[string]*distanceRing{}} }

// observe records one probe's round trip to cell.
func (d *distances) observe(cell string, rtt time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.cells[cell]
	if r == nil {
		r = &distanceRing{}
		d.cells[cell] = r
	}
	r.samples[r.next] = rtt
	r.next = (r.next + 1) % distanceWindow
	if r.n < distanceWindow {
		r.n++
	}
}

// of returns cell's distance: the least recorded round trip, or zero.
func (d *distances) of(cell string) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	r := d.cells[cell]
	if r == nil || r.n == 0 {
		return 0
	}
	least := r.samples[0]
	for _, s := range r.samples[1:r.n] {
		least = min(least, s)
	}
	return least
}
