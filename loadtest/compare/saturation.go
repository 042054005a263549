package compare

// Saturation holds the comparison's figures under load (issue 24): what
// share of the reachable reuse each mode cached, and kv's TTFT against
// round-robin and kv-nospec at p50, p90 and p99, with the targets.
//
// Each TTFT figure comes twice: from the send (the ttft_* every mode
// reports) and from each request's scheduled arrival
// (ttft_from_arrival_*). They differ only at a rate where the load
// generator's concurrency cap held requests back (the modes' delayed):
// there the replay is a closed loop, the backlog waits in the generator
// uncounted, and a mode's TTFT from the send is about the cap over its
// throughput whatever the rate, so a mode that falls behind the
// schedule shows no more than one that keeps it. The verdicts, and a
// sweep's stop (RunSweep), use the TTFT from arrival: what users wait.
type Saturation struct {
	// CachedOverReachable is each mode's cached-token ratio over the
	// reachable reuse.
	CachedOverReachable map[string]float64 `json:"cached_over_reachable"`
	// KVOverRoundRobin is kv's TTFT from the send over round-robin's
	// (below 1: kv is faster); KVOverNoSpec kv's over kv-nospec's. Nil
	// when a mode is missing.
	KVOverRoundRobin *Ratios `json:"kv_over_round_robin,omitempty"`
	KVOverNoSpec     *Ratios `json:"kv_over_kv_nospec,omitempty"`
	// ApproxOverKVP50 is approx's TTFT p50 from the send over kv's.
	ApproxOverKVP50 float64 `json:"approx_over_kv_p50,omitempty"`
	// RoundRobinTTFTP90Ms is round-robin's TTFT p90 from the send.
	RoundRobinTTFTP90Ms float64 `json:"round_robin_ttft_p90_ms"`

	// KVOverRoundRobinFromArrival, KVOverNoSpecFromArrival and
	// ApproxOverKVP50FromArrival are the same from the scheduled arrival,
	// and RoundRobinTTFTFromArrivalP90Ms round-robin's p90 from it: a
	// sweep's targets apply up to the rate where it reaches DefaultSweepLimitMs.
	KVOverRoundRobinFromArrival    *Ratios `json:"kv_over_round_robin_from_arrival,omitempty"`
	KVOverNoSpecFromArrival        *Ratios `json:"kv_over_kv_nospec_from_arrival,omitempty"`
	ApproxOverKVP50FromArrival     float64 `json:"approx_over_kv_p50_from_arrival,omitempty"`
	RoundRobinTTFTFromArrivalP90Ms float64 `json:"round_robin_ttft_from_arrival_p90_ms"`
	// ScheduleKept says no mode's requests waited for the generator's
	// concurrency cap: the two TTFT figures are then equal.
	ScheduleKept bool `json:"schedule_kept"`

	// ReusePass: kv cached at least 0.9 of the reachable reuse.
	// RoundRobinPass and NoSpecPass: kv's TTFT from arrival at most
	// theirs at p50, p90 and p99. ApproxPass: approx within 1.5x of kv at
	// p50 from arrival. Pass is every one of them that could be measured.
	ReusePass      bool `json:"reuse_pass"`
	RoundRobinPass bool `json:"round_robin_pass"`
	NoSpecPass     bool `json:"nospec_pass"`
	ApproxPass     bool `json:"approx_pass"`
	Pass           bool `json:"pass"`
}

// Ratios are one mode's TTFT over another's at three percentiles.
type Ratios struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// atMost1 reports whether every ratio is at most 1.
func (r *Ratios) atMost1() bool { return r != nil && r.P50 <= 1 && r.P90 <= 1 && r.P99 <= 1 }

// ttftOf picks three TTFT percentiles of a mode: from the send
// (fromSend) or from the scheduled arrival (fromArrival).
type ttftOf func(*ModeResult) [3]float64

func fromSend(m *ModeResult) [3]float64 { return [3]float64{m.TTFTP50Ms, m.TTFTP90Ms, m.TTFTP99Ms} }

func fromArrival(m *ModeResult) [3]float64 {
	return [3]float64{m.TTFTFromArrivalP50Ms, m.TTFTFromArrivalP90Ms, m.TTFTFromArrivalP99Ms}
}

// ttftRatios is a's TTFT over b's, as of picks them; nil when either is
// missing.
func ttftRatios(a, b *ModeResult, of ttftOf) *Ratios {
	if a == nil || b == nil {
		return nil
	}
	x, y := of(a), of(b)
	var r [3]float64
	for i := range r {
		if y[i] > 0 {
			r[i] = x[i] / y[i]
		}
	}
	return &Ratios{P50: r[0], P90: r[1], P99: r[2]}
}

// saturation computes r's Saturation; nil without kv.
func (r *Report) saturation() *Saturation {
	kv := r.Modes[ModeKV]
	if kv == nil {
		return nil
	}
	s := &Saturation{CachedOverReachable: map[string]float64{}, ScheduleKept: true}
	for name, m := range r.Modes {
		if r.ReachableReuse > 0 {
			s.CachedOverReachable[name] = m.CachedTokenRatio / r.ReachableReuse
		}
		s.ScheduleKept = s.ScheduleKept && m.Delayed == 0
	}
	rr, ns, ap := r.Modes[ModeRoundRobin], r.Modes[ModeKVNoSpec], r.Modes[ModeApprox]
	s.KVOverRoundRobin, s.KVOverNoSpec = ttftRatios(kv, rr, fromSend), ttftRatios(kv, ns, fromSend)
	s.KVOverRoundRobinFromArrival, s.KVOverNoSpecFromArrival = ttftRatios(kv, rr, fromArrival), ttftRatios(kv, ns, fromArrival)
	if rr != nil {
		s.RoundRobinTTFTP90Ms, s.RoundRobinTTFTFromArrivalP90Ms = rr.TTFTP90Ms, rr.TTFTFromArrivalP90Ms
	}
	if ap != nil && kv.TTFTP50Ms > 0 {
		s.ApproxOverKVP50 = ap.TTFTP50Ms / kv.TTFTP50Ms
	}
	if ap != nil && kv.TTFTFromArrivalP50Ms > 0 {
		s.ApproxOverKVP50FromArrival = ap.TTFTFromArrivalP50Ms / kv.TTFTFromArrivalP50Ms
	}
	s.judge()
	return s
}

// judge sets s's verdicts from its figures: each comparison that could be
// measured (its ratios set: the modes ran) is judged, and Pass is all of
// them.
func (s *Saturation) judge() {
	s.ReusePass = s.CachedOverReachable[ModeKV] >= 0.9
	s.Pass = s.ReusePass
	if s.KVOverRoundRobinFromArrival != nil {
		s.RoundRobinPass = s.KVOverRoundRobinFromArrival.atMost1()
		s.Pass = s.Pass && s.RoundRobinPass
	}
	if s.KVOverNoSpecFromArrival != nil {
		s.NoSpecPass = s.KVOverNoSpecFromArrival.atMost1()
		s.Pass = s.Pass && s.NoSpecPass
	}
	if s.ApproxOverKVP50FromArrival > 0 {
		s.ApproxPass = s.ApproxOverKVP50FromArrival <= 1.5
		s.Pass = s.Pass && s.ApproxPass
	}
}
