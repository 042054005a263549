package indexbench

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the q-quantile (0 < q <= 1) of samples by the nearest
// rank method: the smallest sample with at least q of the samples at or
// below it. It sorts samples in place and returns 0 for no samples.
func Percentile(samples []int64, q float64) int64 {
	if len(samples) == 0 {
		return 0
	}
	slices.Sort(samples)
	rank := int(math.Ceil(q*float64(len(samples)))) - 1
	return samples[min(max(rank, 0), len(samples)-1)]
}

// TimerOverhead returns the median cost in ns of the time.Now/time.Since pair
// that brackets every timed Match, over rounds of many pairs.
func TimerOverhead() float64 {
	const pairs, rounds = 20000, 9
	var per []float64
	var sink time.Duration
	for r := 0; r < rounds; r++ {
		start := time.Now()
		for i := 0; i < pairs; i++ {
			t0 := time.Now()
			sink += time.Since(t0)
		}
		per = append(per, float64(time.Since(start).Nanoseconds())/pairs)
	}
	_ = sink
	slices.Sort(per)
	return per[len(per)/2]
}
