package indexbench

import (
	"runtime"
	"sync/atomic"
	"time"
)

// applyLoop applies the first n events of s as they fall due, batching the
// due events into one Apply call of at most maxBatch ops (whole events). It
// stops when done, at hard ns after start, or when stop is set. It allocates
// nothing itself.
func applyLoop(ix Indexer, s *stream, n int, k float64, start time.Time, hard int64, maxBatch int, c *counter, stop *atomic.Bool) {
	done := 0
	var busy int64
	defer func() { c.busy.Store(busy) }()
	for done < n {
		now := int64(time.Since(start))
		if now >= hard || stop.Load() {
			break
		}
		first := s.start(done)
		j := done
		for j < n && due(s.at[j], k) <= now {
			if j > done && int(s.end[j])-first > maxBatch {
				break
			}
			j++
		}
		if j == done {
			wait(due(s.at[done], k) - now)
			continue
		}
		t0 := time.Now()
		ix.Apply(s.ops[first:s.end[j-1]])
		busy += int64(time.Since(t0))
		done = j
		c.ops.Store(int64(s.end[j-1]))
		c.items.Store(int64(j))
		// Yield between batches, as a consumer blocking on its next read
		// would, so that with more goroutines than Ps the queriers get a P
		// within one batch instead of one 10 ms preemption slice.
		runtime.Gosched()
	}
	c.finish.Store(int64(time.Since(start)))
}

// queryLoop issues queries q, q+nq, ... below n as they fall due and times
// every Match, appending the latencies in ns to lat (which has the capacity
// for all of them, so the loop allocates nothing itself).
//
// After every Match it also times a fixed CPU-only loop the same way and
// appends that to noise: a control whose tail shows what the machine (the OS
// scheduler, other processes, GC pauses) adds to any timed region, whatever
// the index does.
func queryLoop(m Matcher, w *Workload, q, nq, n int, k float64, start time.Time, hard int64, c *counter, lat, noise []int64, stop *atomic.Bool) ([]int64, []int64) {
	var ops, items int64
	var sink uint64
	var busy int64
	defer func() {
		controlSink.Add(sink)
		c.busy.Store(busy)
		c.finish.Store(int64(time.Since(start)))
	}()
	for i := q; i < n; i += nq {
		d := due(w.At[i], k)
		for {
			now := int64(time.Since(start))
			if now >= hard || stop.Load() {
				return lat, noise
			}
			if now >= d {
				break
			}
			wait(d - now)
		}
		chain := w.Chains[i]
		t0 := time.Now()
		m.Match(chain)
		t1 := time.Now()
		lat = append(lat, int64(t1.Sub(t0)))
		busy += int64(t1.Sub(t0))
		sink += controlWork(uint64(chain[0]))
		noise = append(noise, int64(time.Since(t1)))
		ops += int64(len(chain))
		items++
		c.ops.Store(ops)
		c.items.Store(items)
	}
	return lat, noise
}

// controlIters sizes controlWork to about a microsecond.
const controlIters = 400

// controlSink keeps controlWork from being optimised away.
var controlSink atomic.Uint64

// controlWork is a fixed, memory-free computation of about a microsecond.
func controlWork(seed uint64) uint64 {
	x := seed | 1
	for i := 0; i < controlIters; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}
