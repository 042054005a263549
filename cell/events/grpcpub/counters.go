package grpcpub

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Counters is a snapshot of what a Server did since it started.
type Counters struct {
	// AppliedBatches is the number of batches the sink applied.
	AppliedBatches uint64
	// AppliedEvents is the number of events in them (without the
	// AllBlocksCleared the server adds after a restart).
	AppliedEvents uint64
	// Restarts is the number of publisher restarts seen.
	Restarts uint64
	// Dropped is the number of requests dropped, by reason label (the
	// Reason... constants, or a sink error's own Reason()).
	Dropped map[string]uint64
}

// DroppedTotal is the sum of Dropped.
func (c Counters) DroppedTotal() uint64 {
	var n uint64
	for _, v := range c.Dropped {
		n += v
	}
	return n
}

// counters is the live, concurrency-safe form of Counters. Applies are
// counted with atomics; drops, which are rare, under a lock.
type counters struct {
	appliedBatches atomic.Uint64
	appliedEvents  atomic.Uint64
	restarts       atomic.Uint64

	mu      sync.Mutex
	dropped map[string]uint64
}

// drop counts one dropped request.
func (c *counters) drop(reason string) {
	c.mu.Lock()
	if c.dropped == nil {
		c.dropped = make(map[string]uint64)
	}
	c.dropped[reason]++
	c.mu.Unlock()
}

// snapshot copies the counters.
func (c *counters) snapshot() Counters {
	c.mu.Lock()
	d := maps.Clone(c.dropped)
	c.mu.Unlock()
	if d == nil {
		d = map[string]uint64{}
	}
	return Counters{
		AppliedBatches: c.appliedBatches.Load(),
		AppliedEvents:  c.appliedEvents.Load(),
		Restarts:       c.restarts.Load(),
		Dropped:        d,
	}
}
