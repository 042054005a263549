package pipeline

import (
	"context"
	"errors"
	"fmt"
)

// ErrNoCandidate is returned when no candidate can take the request even
// after failing open (no pod alive with the right role).
var ErrNoCandidate = errors.New("pipeline: no candidate pod")

// Decision is a Selector's answer: the candidates in preference order (the
// first is the pick; the others are fall-backs for retries before the first
// byte), with their scores.
type Decision struct {
	// Profile is the profile that decided.
	Profile string
	// Order lists candidate indices, best first.
	Order []int
	// Scores[i] is the weighted score of Candidates[Order[i]].
	Scores []float64
	// FailedOpen is true when every candidate had been filtered and the
	// decision ignored the soft filters.
	FailedOpen bool
}

// Pick returns the index of the chosen candidate.
func (d Decision) Pick() int { return d.Order[0] }

// Observer is told about each stage of a decision; metrics and tracing
// implement it outside the core (the core imports neither). Stage is called
// when a stage starts, with the decision's context, and returns the context
// the stage runs under (a tracing observer opens a span there) and the
// function to call when the stage ends. Calls are synchronous and must be
// cheap.
type Observer interface {
	Stage(ctx context.Context, profile string, st Stage) (context.Context, func(error))
}

// Selector runs one pass of Prepare, Filter, Score and Pick under a profile.
type Selector struct {
	p   *Profile
	obs Observer
}

// NewSelector returns a selector for p; obs may be nil.
func NewSelector(p *Profile, obs Observer) *Selector { return &Selector{p: p, obs: obs} }

// Profile returns the selector's profile.
func (s *Selector) Profile() *Profile { return s.p }

func nop(error) {}

// stage opens a stage with the observer.
func (s *Selector) stage(ctx context.Context, st Stage) (context.Context, func(error)) {
	if s.obs == nil {
		return ctx, nop
	}
	return s.obs.Stage(ctx, s.p.Name, st)
}

// Prepare runs the profile's preparers: the request facts every later
// stage reads. Preparers whose slots are already set by an earlier selector
// of the same decision (the prefill pass of a disaggregated plan) still run:
// a preparer that is expensive checks its slot first.
func (s *Selector) Prepare(ctx context.Context, rc *Context) error {
	rc.Ctx = ctx
	sctx, end := s.stage(ctx, StagePrepare)
	for _, pr := range s.p.preparers {
		if err := pr.Prepare(sctx, rc); err != nil {
			err = fmt.Errorf("pipeline: profile %q: prepare %s: %w", s.p.Name, pr.Type(), err)
			end(err)
			return err
		}
	}
	end(nil)
	return nil
}

// Select runs the whole pass and returns the decision. It is pure given the
// context (candidates, request, randomness): it changes no state outside rc.
func (s *Selector) Select(ctx context.Context, rc *Context) (Decision, error) {
	if err := s.Prepare(ctx, rc); err != nil {
		return Decision{}, err
	}
	return s.Choose(rc)
}

// Choose runs Filter, Score and Pick on a prepared context.
func (s *Selector) Choose(rc *Context) (Decision, error) {
	ctx := rc.Ctx
	if ctx == nil {
		ctx = context.Background()
	}
	var x *PassExplain
	if rc.explain != nil {
		x = rc.explain.pass(s.p)
	}
	_, end := s.stage(ctx, StageFilter)
	s.filter(rc, false)
	if len(rc.active) == 0 {
		if x != nil {
			x.SoftRejected = append(x.SoftRejected, rc.rejected...)
		}
		s.filter(rc, true) // fail open: hard filters only
		rc.failOpen = true
		if len(rc.active) == 0 {
			if x != nil {
				x.Rejected, x.FailedOpen = append(x.Rejected, rc.rejected...), true
			}
			end(ErrNoCandidate)
			return Decision{Profile: s.p.Name, FailedOpen: true}, ErrNoCandidate
		}
	}
	if x != nil {
		x.Rejected, x.FailedOpen = append(x.Rejected, rc.rejected...), rc.failOpen
		x.Active = append(x.Active, rc.active...)
	}
	end(nil)
	_, end = s.stage(ctx, StageScore)
	n := len(rc.active)
	if cap(rc.scores) < 2*n {
		rc.scores = make([]float64, 2*n)
	}
	total, tmp := rc.scores[:n], rc.scores[n:2*n]
	clear(total)
	for i, sc := range s.p.scorers {
		w := s.p.weights[i]
		if i == 0 {
			// The first scorer writes the total itself: with one scorer
			// (the default profile) that saves two passes over the pods.
			sc.Score(rc, total)
			if x != nil {
				x.scored(i, total)
			}
			if w != 1 {
				for k := range total {
					total[k] *= w
				}
			}
			continue
		}
		clear(tmp)
		sc.Score(rc, tmp)
		if x != nil {
			x.scored(i, tmp)
		}
		for k := range total {
			total[k] += w * tmp[k]
		}
	}
	end(nil)
	_, end = s.stage(ctx, StagePick)
	order := s.p.picker.Pick(rc, total, rc.order[:0])
	rc.order = order
	end(nil)
	if x != nil {
		x.Total = append(x.Total, total...)
		for _, pos := range order {
			x.Order = append(x.Order, rc.active[pos])
		}
	}
	if len(order) == 0 {
		return Decision{Profile: s.p.Name}, ErrNoCandidate
	}
	d := Decision{Profile: s.p.Name, Order: make([]int, len(order)), Scores: make([]float64, len(order)), FailedOpen: rc.failOpen}
	for i, pos := range order {
		d.Order[i] = rc.active[pos]
		d.Scores[i] = total[pos]
	}
	return d, nil
}

// filter fills rc.active with the candidates every filter keeps (only the
// hard filters when hardOnly). Filters run one after the other over the
// survivors of the previous one; a BatchFilter takes the whole list at once.
func (s *Selector) filter(rc *Context, hardOnly bool) {
	rc.Phase = s.p.Role
	rc.rejected = rc.rejected[:0]
	in := append(rc.active[:0], rc.everyone()...)
	out := rc.spare[:0]
	for _, f := range s.p.filters {
		if hardOnly && !f.Hard() {
			continue
		}
		out = out[:0]
		if bf, ok := f.(BatchFilter); ok {
			out = bf.KeepAll(rc, in, out)
		} else {
			for _, i := range in {
				if ok, why := f.Keep(rc, i); ok {
					out = append(out, i)
				} else {
					rc.Reject(i, f.Type(), why)
				}
			}
		}
		in, out = out, in
	}
	rc.active, rc.spare = in, out
}
