package indexbench

// Point is one measured sweep step, as FindThreshold sees it.
type Point struct {
	// Offered is the block-ops/s the step offered.
	Offered float64
	// Achieved is the block-ops/s it completed.
	Achieved float64
	// Backlog is the fraction of the step's block-ops still queued at the
	// end of its window.
	Backlog float64
}

// Threshold is the outcome of a sweep.
type Threshold struct {
	// Index is the threshold step's position in the points, or -1.
	Index int
	// Found says some step passed.
	Found bool
	// Valid says a step passed and its backlog was within the limit.
	Valid bool
	// LowerBound says no step at a higher offered rate failed, so the true
	// threshold may be higher than the one found.
	LowerBound bool
}

// Passes reports whether p achieved at least minRatio of its offered rate.
func (p Point) Passes(minRatio float64) bool {
	return p.Offered > 0 && p.Achieved >= minRatio*p.Offered
}

// FindThreshold picks the threshold of a sweep: the step with the highest
// offered rate whose achieved rate is at least minRatio of it. Points may
// come in any order. The result is valid when that step's backlog is at most
// maxBacklog. It is a lower bound when no failing step had a higher offered
// rate.
func FindThreshold(points []Point, minRatio, maxBacklog float64) Threshold {
	t := Threshold{Index: -1}
	for i, p := range points {
		if p.Passes(minRatio) && (t.Index < 0 || p.Offered > points[t.Index].Offered) {
			t.Index = i
		}
	}
	if t.Index < 0 {
		return t
	}
	best := points[t.Index]
	t.Found = true
	t.Valid = best.Backlog <= maxBacklog
	t.LowerBound = true
	for _, p := range points {
		if !p.Passes(minRatio) && p.Offered > best.Offered {
			t.LowerBound = false
		}
	}
	return t
}
