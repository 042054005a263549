package zmqsub

import (
	"sync"
	"time"
)

// rateLimiter allows at most one event per key every interval, and counts
// the events it suppressed so the next allowed log line can say how many.
// It is safe for concurrent use; it is only consulted on error paths.
type rateLimiter struct {
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	keys map[string]*rateKey
}

// rateKey is the state of one key.
type rateKey struct {
	last       time.Time
	suppressed uint64
}

// newRateLimiter returns a limiter allowing one event per key every every;
// now is the clock (nil means time.Now).
func newRateLimiter(every time.Duration, now func() time.Time) *rateLimiter {
	if now == nil {
		now = time.Now
	}
	return &rateLimiter{every: every, now: now, keys: make(map[string]*rateKey)}
}

// allow reports whether an event of key may be logged now, and how many
// events of key were suppressed since the last one allowed. The set of keys
// is small and fixed by the callers (reason labels), so the map stays small.
func (r *rateLimiter) allow(key string) (ok bool, suppressed uint64) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	k := r.keys[key]
	if k == nil {
		r.keys[key] = &rateKey{last: now}
		return true, 0
	}
	if now.Sub(k.last) < r.every {
		k.suppressed++
		return false, 0
	}
	s := k.suppressed
	k.last, k.suppressed = now, 0
	return true, s
}
