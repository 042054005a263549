package indexbench

import (
	"math"
	"runtime"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// staticFigures are the measurements taken on the final state, without load.
type staticFigures struct {
	heapBytes      int64
	blocks         int64
	accountedBytes int64 // 0 when the indexer does not account its memory
	idleP50        int64
	idleP99        int64
	allocsPerMatch float64
	// bestP50 and bestP99 take each query's fastest of idleRepeats runs
	// first; the work figures are over the sample's queries (0 when the
	// matcher does not count its work).
	bestP50, bestP99       int64
	lookupsP50, lookupsP99 int64
	roundsP50, roundsP99   int64
}

// idleRepeats is how many times the idle pass times each sampled query for
// the best-of figures: the fastest run of a query is its cost without the
// preemptions and cache pollution a shared machine adds to single runs.
const idleRepeats = 5

// workCounter is implemented by matchers that count the work of their last
// Match: lookups (block or page reads) and dependent rounds of them.
type workCounter interface {
	Lookups() int
	Rounds() int
}

// loadBatch is the Apply batch size used to load the final state.
const loadBatch = 4096

// idleSamples bounds the queries of the idle pass: an evenly spaced sample,
// so that the naive baseline's slow Match does not dominate the run.
const idleSamples = 1000

// measureStatic loads the final state (ops) into a fresh indexer from f and
// measures the live heap it grew by, then runs a sample of the queries once
// to warm up and once more, alone, timing each Match and counting
// allocations.
func measureStatic(f Factory, w *Workload, ops []index.Op, expected int) (staticFigures, error) {
	var fig staticFigures
	stride := max(1, len(w.Chains)/idleSamples)
	sample := make([][]blockhash.Hash, 0, len(w.Chains)/stride+1)
	for i := 0; i < len(w.Chains); i += stride {
		sample = append(sample, w.Chains[i])
	}
	lat := make([]int64, len(sample))
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m0)
	ix, err := f.New(w.Workers, expected)
	if err != nil {
		return fig, err
	}
	defer ix.Close()
	for off := 0; off < len(ops); off += loadBatch {
		ix.Apply(ops[off:min(off+loadBatch, len(ops))])
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	fig.heapBytes = int64(m1.HeapAlloc) - int64(m0.HeapAlloc)
	fig.blocks = ix.Blocks()
	if a, ok := ix.(accounter); ok {
		fig.accountedBytes = a.AccountedBytes()
	}

	m := ix.NewMatcher()
	for _, c := range sample {
		m.Match(c)
	}
	best := make([]int64, len(sample))
	lookups := make([]int64, len(sample))
	rounds := make([]int64, len(sample))
	wc, counts := m.(workCounter)
	for i, c := range sample {
		t0 := time.Now()
		m.Match(c)
		lat[i] = int64(time.Since(t0))
		best[i] = lat[i]
		if counts {
			lookups[i], rounds[i] = int64(wc.Lookups()), int64(wc.Rounds())
		}
	}
	for r := 1; r < idleRepeats; r++ {
		for i, c := range sample {
			t0 := time.Now()
			m.Match(c)
			best[i] = min(best[i], int64(time.Since(t0)))
		}
	}
	fig.allocsPerMatch = allocsPerMatch(m, sample)
	fig.idleP50 = Percentile(lat, 0.50)
	fig.idleP99 = Percentile(lat, 0.99)
	fig.bestP50, fig.bestP99 = Percentile(best, 0.50), Percentile(best, 0.99)
	if counts {
		fig.lookupsP50, fig.lookupsP99 = Percentile(lookups, 0.50), Percentile(lookups, 0.99)
		fig.roundsP50, fig.roundsP99 = Percentile(rounds, 0.50), Percentile(rounds, 0.99)
	}
	runtime.KeepAlive(ops)
	return fig, nil
}

// allocsPerMatch counts heap allocations per Match over a few rounds of up
// to 200 queries and returns the smallest round's figure. The counter is
// process-wide, so a background goroutine allocating during one round
// (the GC, an index's sweeper) does not count, while an allocation that
// Match itself makes shows in every round.
func allocsPerMatch(m Matcher, sample [][]blockhash.Hash) float64 {
	sample = sample[:min(len(sample), 200)]
	if len(sample) == 0 {
		return 0
	}
	best := math.Inf(1)
	var m0, m1 runtime.MemStats
	for round := 0; round < 3; round++ {
		runtime.ReadMemStats(&m0)
		for _, c := range sample {
			m.Match(c)
		}
		runtime.ReadMemStats(&m1)
		best = min(best, float64(m1.Mallocs-m0.Mallocs)/float64(len(sample)))
	}
	return best
}
