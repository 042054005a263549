package events

import (
	"sync/atomic"
	"time"
)

// numKinds sizes arrays indexed by Kind (Kind values start at 1).
const numKinds = int(KindAllBlocksCleared) + 1

// Counters are the event layer's counters: plain atomics, safe for
// concurrent use, read by the daemon's metrics exporter. Transports may add
// to the fields that concern them (ReplaysRequested).
type Counters struct {
	// Batches counts batches applied (in full; event drops aside).
	Batches atomic.Uint64
	// Events counts applied events by Kind (index 1..3).
	Events [numKinds]atomic.Uint64
	// BlocksStored and BlocksRemoved count router block writes sent to the
	// index (one per router block per tier).
	BlocksStored, BlocksRemoved atomic.Uint64
	// BatchesDropped counts dropped batches by batch reason.
	BatchesDropped [numReasons]atomic.Uint64
	// EventsDropped counts skipped events by event reason.
	EventsDropped [numReasons]atomic.Uint64
	// RemovesUnknown counts engine hashes in BlockRemoved events that the
	// holder did not track (never seen, or already removed).
	RemovesUnknown atomic.Uint64
	// Gaps counts sequence gaps detected (once per gap, not per batch).
	Gaps atomic.Uint64
	// ReplaysRequested counts replay requests; the transports add to it.
	ReplaysRequested atomic.Uint64
	// GiveUps counts gaps abandoned through Applier.GiveUp.
	GiveUps atomic.Uint64
	// Restarts counts engine restarts detected (sequence back to 0).
	Restarts atomic.Uint64
	// Clears counts AllBlocksCleared events and restarts that cleared a holder.
	Clears atomic.Uint64
	// Kills counts holders killed.
	Kills atomic.Uint64
	// Evicted counts engine blocks evicted by EvictReason: the Applier
	// dropped them from a holder over a bound (evict.go), though the engine
	// may still hold them.
	Evicted [numEvictReasons]atomic.Uint64
	// Lag is the distribution of apply time minus the batch's engine time.
	Lag LagHistogram
}

// LagBuckets are the upper bounds of the LagHistogram buckets; a last,
// unbounded bucket follows them.
var LagBuckets = [...]time.Duration{
	time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second,
}

// LagHistogram is a fixed-bucket histogram of event lag, lock-free. A
// negative lag (engine clock ahead of ours) is counted in the first bucket
// and in Negative.
type LagHistogram struct {
	// Buckets[i] counts lags <= LagBuckets[i] and above the bucket before;
	// the last counts the rest.
	Buckets [len(LagBuckets) + 1]atomic.Uint64
	// Count and SumNanos are the number and sum of observations.
	Count    atomic.Uint64
	SumNanos atomic.Int64
	// Negative counts observations below zero.
	Negative atomic.Uint64
}

// Observe records one lag.
func (h *LagHistogram) Observe(d time.Duration) {
	if d < 0 {
		h.Negative.Add(1)
	}
	i := 0
	for i < len(LagBuckets) && d > LagBuckets[i] {
		i++
	}
	h.Buckets[i].Add(1)
	h.Count.Add(1)
	h.SumNanos.Add(int64(d))
}

// Quantile returns an upper bound of the q-quantile (0 < q <= 1) of the
// observed lags: the bound of the bucket it falls in, or -1 if it falls in
// the unbounded bucket or nothing was observed.
func (h *LagHistogram) Quantile(q float64) time.Duration {
	n := h.Count.Load()
	if n == 0 {
		return -1
	}
	want := uint64(q*float64(n) + 0.5)
	want = max(want, 1)
	var seen uint64
	for i := range LagBuckets {
		seen += h.Buckets[i].Load()
		if seen >= want {
			return LagBuckets[i]
		}
	}
	return -1
}

// engineTime converts an engine timestamp in seconds since the epoch.
func engineTime(ts float64) time.Time {
	sec := int64(ts)
	return time.Unix(sec, int64((ts-float64(sec))*1e9))
}
