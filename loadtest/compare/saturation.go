package compare

// Saturation holds the comparison's figures under load (issue 24): what
// share of the reachable reuse each mode cached, and kv's TTFT against
// round-robin and kv-nospec at p50, p90 and p99, with the targets.
type Saturation struct {
	// CachedOverReachable is each mode's cached-token ratio over the
	// reachable reuse.
	CachedOverReachable map[string]float64 `json:"cached_over_reachable"`
	// KVOverRoundRobin is kv's TTFT over round-robin's (below 1: kv is
	// faster); KVOverNoSpec kv's over kv-nospec's. Nil when a mode is
	// missing.
	KVOverRoundRobin *Ratios `json:"kv_over_round_robin,omitempty"`
	KVOverNoSpec     *Ratios `json:"kv_over_kv_nospec,omitempty"`
	// ApproxOverKVP50 is approx's TTFT p50 over kv's (want <= 1.5).
	ApproxOverKVP50 float64 `json:"approx_over_kv_p50,omitempty"`
	// RoundRobinTTFTP90Ms is round-robin's TTFT p90: a sweep's targets
	// apply up to the rate where it reaches SweepLimitMs.
	RoundRobinTTFTP90Ms float64 `json:"round_robin_ttft_p90_ms"`

	// ReusePass: kv cached at least 0.9 of the reachable reuse.
	// RoundRobinPass and NoSpecPass: kv's TTFT at most theirs at p50, p90
	// and p99. ApproxPass: approx within 1.5x of kv at p50. Pass is every
	// one of them that could be measured.
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

// ttftRatios is a's TTFT over b's; nil when either is missing.
func ttftRatios(a, b *ModeResult) *Ratios {
	if a == nil || b == nil {
		return nil
	}
	div := func(x, y float64) float64 {
		if y > 0 {
			return x / y
		}
		return 0
	}
	return &Ratios{P50: div(a.TTFTP50Ms, b.TTFTP50Ms), P90: div(a.TTFTP90Ms, b.TTFTP90Ms), P99: div(a.TTFTP99Ms, b.TTFTP99Ms)}
}

// saturation computes r's Saturation; nil without kv.
func (r *Report) saturation() *Saturation {
	kv := r.Modes[ModeKV]
	if kv == nil {
		return nil
	}
	s := &Saturation{CachedOverReachable: map[string]float64{}}
	for name, m := range r.Modes {
		if r.ReachableReuse > 0 {
			s.CachedOverReachable[name] = m.CachedTokenRatio / r.ReachableReuse
		}
	}
	rr, ns, ap := r.Modes[ModeRoundRobin], r.Modes[ModeKVNoSpec], r.Modes[ModeApprox]
	s.KVOverRoundRobin, s.KVOverNoSpec = ttftRatios(kv, rr), ttftRatios(kv, ns)
	if rr != nil {
		s.RoundRobinTTFTP90Ms = rr.TTFTP90Ms
	}
	s.ReusePass = s.CachedOverReachable[ModeKV] >= 0.9
	s.Pass = s.ReusePass
	if s.KVOverRoundRobin != nil {
		s.RoundRobinPass = s.KVOverRoundRobin.atMost1()
		s.Pass = s.Pass && s.RoundRobinPass
	}
	if s.KVOverNoSpec != nil {
		s.NoSpecPass = s.KVOverNoSpec.atMost1()
		s.Pass = s.Pass && s.NoSpecPass
	}
	if ap != nil && kv.TTFTP50Ms > 0 {
		s.ApproxOverKVP50 = ap.TTFTP50Ms / kv.TTFTP50Ms
		s.ApproxPass = s.ApproxOverKVP50 <= 1.5
		s.Pass = s.Pass && s.ApproxPass
	}
	return s
}
