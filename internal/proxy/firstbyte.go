package proxy

import (
	"slices"
	"sync"
	"time"
)

// ttftSamples is how many recent times to first byte each target keeps; its
// p99 is then the largest but one.
const ttftSamples = 128

// ttftRecompute is how many new samples make a target's bound recomputed.
const ttftRecompute = 16

// firstByteBounds learns each target's time to first byte of streamed
// responses and derives the first-byte bound from it:
// max(floor, factor x p99) capped at max. A target with no samples gets the
// floor. It is safe for concurrent use.
type firstByteBounds struct {
	floor, max time.Duration
	factor     float64

	mu      sync.Mutex
	targets map[string]*ttftRing
}

// ttftRing holds one target's recent samples and its current bound.
type ttftRing struct {
	samples [ttftSamples]time.Duration
	n, next int           // samples held; where the next goes
	fresh   int           // samples since the bound was computed
	bound   time.Duration // the current bound
}

func newFirstByteBounds(c WatchConfig) *firstByteBounds {
	return &firstByteBounds{floor: c.FirstByteTimeout, max: c.FirstByteTimeoutMax, factor: c.FirstByteFactor, targets: map[string]*ttftRing{}}
}

// bound returns the first-byte bound of the target at addr.
func (b *firstByteBounds) bound(addr string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r := b.targets[addr]; r != nil && r.bound > 0 {
		return r.bound
	}
	return b.floor
}

// observe records a streamed response's time to first byte from addr.
func (b *firstByteBounds) observe(addr string, ttft time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.targets[addr]
	if r == nil {
		if len(b.targets) >= maxPeers {
			clear(b.targets)
		}
		r = &ttftRing{}
		b.targets[addr] = r
	}
	r.samples[r.next] = ttft
	r.next = (r.next + 1) % ttftSamples
	r.n = min(r.n+1, ttftSamples)
	r.fresh++
	if r.fresh >= ttftRecompute || r.bound == 0 {
		r.fresh = 0
		r.bound = b.derive(p99(r.samples[:r.n]))
	}
}

// derive is the bound for a p99 time to first byte.
func (b *firstByteBounds) derive(p time.Duration) time.Duration {
	d := time.Duration(float64(p) * b.factor)
	return min(max(d, b.floor), b.max)
}

// p99 returns the 99th percentile of s (nearest rank), which it does not
// modify.
func p99(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := slices.Clone(s)
	slices.Sort(c)
	k := (len(c)*99 + 99) / 100 // ceil(0.99 n), 1-based
	return c[k-1]
}
