package pipeline

// Explain records what the stages of one decision saw and decided, for the
// cell's decision explanations: per selector pass, the filter verdicts
// (with the soft filters' verdicts kept when the pass failed open), each
// scorer's raw score and weight per surviving candidate, the weighted
// totals and the picker's order.
//
// It is recorded by Selector.Choose from the very slices the decision is
// made of (a copy of each, taken as the stage ends), not recomputed after
// the fact. It is off unless Context.SetExplain turned it on: then Choose
// tests one nil pointer per stage and per scorer and does nothing more,
// which is what keeps BenchmarkDecision where it was.
//
// An Explain belongs to its Context and is reused across decisions; read
// it before the context's next Reset.
type Explain struct {
	// Passes holds one entry per selector pass of the decision: one for an
	// aggregated plan, prefill then decode for a disaggregated one.
	Passes []PassExplain

	n int // passes in use
}

// PassExplain is one selector pass as it happened.
type PassExplain struct {
	// Profile names the pass's profile; Phase is its role; Picker the
	// picker's type.
	Profile string
	Phase   Role
	Picker  string
	// Scorers are the profile's scorers in order, with their weights.
	Scorers []ScorerWeight
	// Rejected are the filter verdicts that removed candidates. When the
	// pass failed open they are the hard filters' only, and SoftRejected
	// holds what the full filter pass had said before.
	Rejected, SoftRejected []Rejection
	// FailedOpen is Decision.FailedOpen of the pass.
	FailedOpen bool
	// Active are the candidate indices that reached Score.
	Active []int
	// Raw[s][k] is scorer s's own score of candidate Active[k], before
	// its weight.
	Raw [][]float64
	// Total[k] is the weighted sum the picker saw for Active[k].
	Total []float64
	// Order lists candidate indices as the picker ranked them, best first.
	Order []int
}

// ScorerWeight is a scorer of a profile and its weight.
type ScorerWeight struct {
	Type   string
	Weight float64
}

// SetExplain turns recording of the next decision's Explain on or off.
// Reset turns it off.
func (rc *Context) SetExplain(on bool) {
	if !on {
		rc.explain = nil
		return
	}
	if rc.explainBuf == nil {
		rc.explainBuf = new(Explain)
	}
	rc.explain = rc.explainBuf
	rc.explain.n = 0
}

// Explained returns what the decision recorded, or nil when explaining was
// off. The value is the context's; do not keep it past the next Reset.
func (rc *Context) Explained() *Explain {
	if rc.explain == nil {
		return nil
	}
	rc.explain.Passes = rc.explain.Passes[:rc.explain.n]
	return rc.explain
}

// pass starts the record of a pass of p and returns it.
func (x *Explain) pass(p *Profile) *PassExplain {
	if x.n == len(x.Passes) {
		x.Passes = append(x.Passes, PassExplain{})
	}
	ps := &x.Passes[x.n]
	x.n++
	ps.Profile, ps.Phase, ps.Picker = p.Name, p.Role, ""
	if p.picker != nil {
		ps.Picker = p.picker.Type()
	}
	ps.Scorers = ps.Scorers[:0]
	for i, sc := range p.scorers {
		ps.Scorers = append(ps.Scorers, ScorerWeight{Type: sc.Type(), Weight: p.weights[i]})
	}
	ps.Rejected, ps.SoftRejected = ps.Rejected[:0], ps.SoftRejected[:0]
	ps.FailedOpen = false
	ps.Active, ps.Total, ps.Order = ps.Active[:0], ps.Total[:0], ps.Order[:0]
	for len(ps.Raw) < len(p.scorers) {
		ps.Raw = append(ps.Raw, nil)
	}
	ps.Raw = ps.Raw[:len(p.scorers)]
	for i := range ps.Raw {
		ps.Raw[i] = ps.Raw[i][:0]
	}
	return ps
}

// scored records scorer i's raw output for the active candidates.
func (ps *PassExplain) scored(i int, out []float64) {
	ps.Raw[i] = append(ps.Raw[i][:0], out...)
}
