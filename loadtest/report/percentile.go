package report

import (
	"math"
	"sort"
)

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted values,
// interpolating linearly between the two nearest ranks; NaN when empty.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	pos := p / 100 * float64(n-1)
	lo := int(pos)
	if lo+1 >= n {
		return sorted[n-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}

// Dist is a distribution's summary, in milliseconds.
type Dist struct {
	P50, P90, P99, Mean, Max float64
	N                        int
}

// distOf summarises values (sorting them in place); all zero when empty.
func distOf(values []float64) Dist {
	if len(values) == 0 {
		return Dist{}
	}
	sort.Float64s(values)
	sum := 0.0
	for _, v := range values {
		sum += v
	}
	return Dist{
		P50: Percentile(values, 50), P90: Percentile(values, 90), P99: Percentile(values, 99),
		Mean: sum / float64(len(values)), Max: values[len(values)-1], N: len(values),
	}
}
