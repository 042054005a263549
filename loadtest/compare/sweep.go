package compare

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
)

// DefaultSweepLimitMs is where a rate sweep stops by default: the first
// rate at which round-robin's TTFT p90 from arrival reaches 5 s (issue
// 24's targets apply up to that rate; Saturation says why from arrival).
const DefaultSweepLimitMs = 5000

// SweepConfig says which rates a sweep runs, where it stops and how many
// times it runs each.
type SweepConfig struct {
	// Rates are the multipliers of the configuration's arrival rate, run
	// in order.
	Rates []float64
	// LimitMs stops the sweep after the first rate where round-robin's
	// TTFT p90 from arrival reaches it (0: never).
	LimitMs float64
	// Repeat runs each rate that many times and judges the medians
	// (SweepPoint.Median); 0 or 1 runs it once.
	Repeat int
}

// Sweep is the comparison run at several arrival rates.
type Sweep struct {
	// LimitMs is the round-robin TTFT p90 from arrival at which the sweep
	// stopped raising the rate (0: it ran every rate).
	LimitMs float64 `json:"limit_ms"`
	// Repeat is how many times each rate ran.
	Repeat int `json:"repeat"`
	// Points are the rates run, in order.
	Points []SweepPoint `json:"points"`
	// Pass is every point's Saturation.Pass.
	Pass bool `json:"pass"`
}

// SweepPoint is one rate of a sweep.
type SweepPoint struct {
	// Rate multiplies the configuration's arrival rate: the trace's time
	// scale is Config.TimeScale / Rate.
	Rate      float64 `json:"rate"`
	TimeScale float64 `json:"time_scale"`
	// RequestsPerS is the slice's mean arrival rate at this point.
	RequestsPerS float64 `json:"requests_per_s"`
	// Report is the full comparison at this rate (its first run).
	Report *Report `json:"report"`
	// Repeats are the rate's further runs (SweepConfig.Repeat), each a
	// full comparison.
	Repeats []*Report `json:"repeats,omitempty"`
	// Median is each Saturation figure's median over the runs, with the
	// verdicts on it; nil with one run.
	Median *Saturation `json:"median,omitempty"`
}

// Judged is the figures the point is judged on: the medians over its
// runs, or its one run's.
func (p *SweepPoint) Judged() *Saturation {
	if p.Median != nil {
		return p.Median
	}
	return p.Report.Saturation
}

// runs returns every run of the point, the first one first.
func (p *SweepPoint) runs() []*Report { return append([]*Report{p.Report}, p.Repeats...) }

// RunSweep runs the comparison of cfg at each of sc's rates in turn (each
// a multiplier of cfg's arrival rate), sc.Repeat times each, and stops
// after the first rate where round-robin's TTFT p90 from arrival (the
// median over the rate's runs) reaches sc.LimitMs. From the send it would
// never stop on a workload where the load generator's concurrency cap
// binds first: past it round-robin's TTFT from the send stays near the
// cap over its throughput, while its users wait longer at every higher
// rate.
func RunSweep(ctx context.Context, cfg Config, sc SweepConfig, opt Options) (*Sweep, error) {
	if len(sc.Rates) == 0 {
		return nil, fmt.Errorf("compare: no rates to sweep")
	}
	for _, r := range sc.Rates {
		if !(r > 0) {
			return nil, fmt.Errorf("compare: rate %v, want > 0", r)
		}
	}
	if sc.Repeat < 0 {
		return nil, fmt.Errorf("compare: repeat %d, want >= 0 (0 and 1 run each rate once)", sc.Repeat)
	}
	repeat := max(1, sc.Repeat)
	sw := &Sweep{LimitMs: sc.LimitMs, Repeat: repeat, Pass: true}
	for _, rate := range sc.Rates {
		c := cfg
		c.TimeScale = cfg.TimeScale / rate
		p := SweepPoint{Rate: rate, TimeScale: c.TimeScale}
		for i := range repeat {
			if repeat > 1 {
				say(opt.Progress, "compare: rate x%g (time scale %g), run %d of %d\n", rate, c.TimeScale, i+1, repeat)
			} else {
				say(opt.Progress, "compare: rate x%g (time scale %g)\n", rate, c.TimeScale)
			}
			rep, err := Run(ctx, c, opt)
			if err != nil {
				return nil, err
			}
			if i == 0 {
				p.Report = rep
			} else {
				p.Repeats = append(p.Repeats, rep)
			}
		}
		if span := p.Report.TraceSpanS * c.TimeScale; span > 0 {
			p.RequestsPerS = float64(p.Report.Requests) / span
		}
		if repeat > 1 {
			var ss []*Saturation
			for _, r := range p.runs() {
				ss = append(ss, r.Saturation)
			}
			p.Median = medianSaturation(ss)
		}
		sw.Points = append(sw.Points, p)
		s := p.Judged()
		if s != nil {
			sw.Pass = sw.Pass && s.Pass
		}
		if stopAfter(s, sc.LimitMs) {
			break
		}
	}
	return sw, nil
}

// stopAfter reports whether a sweep stops after a rate judged on s:
// round-robin's TTFT p90 from arrival reached limitMs (never at 0, nor
// without round-robin).
func stopAfter(s *Saturation, limitMs float64) bool {
	return limitMs > 0 && s != nil && s.RoundRobinTTFTFromArrivalP90Ms >= limitMs
}

// WriteTable writes one row per rate: the requests round-robin and kv
// held back for the generator's concurrency cap, round-robin's TTFT p90,
// kv's TTFT over round-robin's and kv-nospec's, approx's p50 over kv's
// (all from arrival, as the verdicts), each mode's share of the reachable
// reuse and the verdict; with repeated runs, each the median over them.
func (sw *Sweep) WriteTable(w io.Writer) error {
	if len(sw.Points) == 0 {
		return nil
	}
	names := sw.Points[0].Report.Names()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "rate\treq/s\treachable\tdelayed rr/kv\trr p90 ms\tkv p50/p90/p99 ms\tkv/rr p50/p90/p99\tkv/nospec p50/p90/p99\tapprox/kv p50\t")
	for _, n := range names {
		fmt.Fprintf(tw, "%s/reach\t", n)
	}
	fmt.Fprintln(tw, "pass\t")
	ratios := func(r *Ratios) string {
		if r == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f/%.2f/%.2f", r.P50, r.P90, r.P99)
	}
	for _, p := range sw.Points {
		rep, s := p.Report, p.Judged()
		if s == nil {
			continue
		}
		runs := p.runs()
		delayedOf := func(m *ModeResult) float64 { return float64(m.Delayed) }
		delayed := "-"
		if rep.Modes[ModeRoundRobin] != nil {
			delayed = fmt.Sprintf("%.0f/%.0f", modeMedian(runs, ModeRoundRobin, delayedOf), modeMedian(runs, ModeKV, delayedOf))
		}
		fmt.Fprintf(tw, "x%g\t%.1f\t%.3f\t%s\t%.0f\t%.0f/%.0f/%.0f\t%s\t%s\t%.2f\t", p.Rate, p.RequestsPerS, rep.ReachableReuse, delayed,
			s.RoundRobinTTFTFromArrivalP90Ms, modeMedian(runs, ModeKV, func(m *ModeResult) float64 { return m.TTFTFromArrivalP50Ms }),
			modeMedian(runs, ModeKV, func(m *ModeResult) float64 { return m.TTFTFromArrivalP90Ms }),
			modeMedian(runs, ModeKV, func(m *ModeResult) float64 { return m.TTFTFromArrivalP99Ms }),
			ratios(s.KVOverRoundRobinFromArrival), ratios(s.KVOverNoSpecFromArrival), s.ApproxOverKVP50FromArrival)
		for _, n := range names {
			fmt.Fprintf(tw, "%.2f\t", s.CachedOverReachable[n])
		}
		fmt.Fprintf(tw, "%s\t\n", verdict(s.Pass))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if sw.Repeat > 1 {
		fmt.Fprintf(w, "each figure the median of %d runs per rate (the JSON keeps every run)\n", sw.Repeat)
	}
	_, err := fmt.Fprintf(w, "TTFT from each request's scheduled arrival (the JSON's ttft_* and kv_over_* are from the send)\n"+
		"targets (issue 24): kv/reach >= 0.9, kv/rr and kv/nospec <= 1 at p50/p90/p99, approx/kv p50 <= 1.5; sweep %s\n", verdict(sw.Pass))
	return err
}

// modeMedian is the median of of over the runs of mode (runs without it
// skipped).
func modeMedian(runs []*Report, mode string, of func(*ModeResult) float64) float64 {
	v := make([]float64, 0, len(runs))
	for _, r := range runs {
		if m := r.Modes[mode]; m != nil {
			v = append(v, of(m))
		}
	}
	return median(v)
}
