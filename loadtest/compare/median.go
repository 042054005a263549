package compare

import "slices"

// Repeated runs: one run at a rate near saturation cannot tell two
// cache-aware modes apart when they cache the same reuse. Their TTFT p90
// and p99 there move by a third between runs of one binary (the order in
// which long prompts meet on a pod decides the tail), so a verdict on one
// run is a coin flip. A sweep with SweepConfig.Repeat runs each rate that
// many times, every mode of a run after the one before it, and judges
// the median of each figure over the runs (medianSaturation); every run's
// full report is kept.

// medianSaturation is the figure-by-figure median of ss (nil entries
// skipped), with its verdicts judged on the medians; nil when no run had
// the figures. A ratio is the median of each percentile's ratio: kv's p99
// over kv-nospec's is taken run by run, where both modes ran side by
// side, then the median of those.
func medianSaturation(ss []*Saturation) *Saturation {
	ss = slices.DeleteFunc(slices.Clone(ss), func(s *Saturation) bool { return s == nil })
	if len(ss) == 0 {
		return nil
	}
	m := &Saturation{CachedOverReachable: map[string]float64{}, ScheduleKept: true}
	names := map[string]bool{}
	for _, s := range ss {
		for n := range s.CachedOverReachable {
			names[n] = true
		}
		m.ScheduleKept = m.ScheduleKept && s.ScheduleKept
	}
	for n := range names {
		var v []float64
		for _, s := range ss {
			if x, ok := s.CachedOverReachable[n]; ok {
				v = append(v, x)
			}
		}
		m.CachedOverReachable[n] = median(v)
	}
	ratios := func(of func(*Saturation) *Ratios) *Ratios {
		var p50, p90, p99 []float64
		for _, s := range ss {
			if r := of(s); r != nil {
				p50, p90, p99 = append(p50, r.P50), append(p90, r.P90), append(p99, r.P99)
			}
		}
		if len(p50) == 0 {
			return nil
		}
		return &Ratios{P50: median(p50), P90: median(p90), P99: median(p99)}
	}
	m.KVOverRoundRobin = ratios(func(s *Saturation) *Ratios { return s.KVOverRoundRobin })
	m.KVOverNoSpec = ratios(func(s *Saturation) *Ratios { return s.KVOverNoSpec })
	m.KVOverRoundRobinFromArrival = ratios(func(s *Saturation) *Ratios { return s.KVOverRoundRobinFromArrival })
	m.KVOverNoSpecFromArrival = ratios(func(s *Saturation) *Ratios { return s.KVOverNoSpecFromArrival })
	figure := func(of func(*Saturation) float64) float64 {
		var v []float64
		for _, s := range ss {
			if x := of(s); x > 0 {
				v = append(v, x)
			}
		}
		return median(v)
	}
	m.ApproxOverKVP50 = figure(func(s *Saturation) float64 { return s.ApproxOverKVP50 })
	m.ApproxOverKVP50FromArrival = figure(func(s *Saturation) float64 { return s.ApproxOverKVP50FromArrival })
	m.RoundRobinTTFTP90Ms = figure(func(s *Saturation) float64 { return s.RoundRobinTTFTP90Ms })
	m.RoundRobinTTFTFromArrivalP90Ms = figure(func(s *Saturation) float64 { return s.RoundRobinTTFTFromArrivalP90Ms })
	m.judge()
	return m
}

// median is the middle of v (the mean of the two middle values when
// their number is even); 0 for none.
func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
