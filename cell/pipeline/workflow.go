package pipeline

import (
	"context"
	"fmt"
)

// Plan is what a Workflow decided: one dispatch, or prefill then decode.
type Plan struct {
	// Disaggregated is true for a prefill-then-decode plan.
	Disaggregated bool
	// Single is the decision of an aggregated plan.
	Single Decision
	// Prefill and Decode are the decisions of a disaggregated plan.
	Prefill, Decode Decision
}

// Workflow composes selectors into a plan: one aggregated selector, or a
// prefill selector and a decode selector where the decode selector sees the
// prefill choice (PrefillPick), so it can prefer a pod near it.
type Workflow struct {
	single          *Selector
	prefill, decode *Selector
}

// NewSingleWorkflow plans every request as one dispatch.
func NewSingleWorkflow(s *Selector) *Workflow { return &Workflow{single: s} }

// NewDisaggregatedWorkflow plans prefill then decode.
func NewDisaggregatedWorkflow(prefill, decode *Selector) (*Workflow, error) {
	if prefill.p.Role != RolePrefill || decode.p.Role != RoleDecode {
		return nil, fmt.Errorf("pipeline: disaggregated workflow needs a prefill profile and a decode profile, got %q (%s) and %q (%s)",
			prefill.p.Name, prefill.p.Role, decode.p.Name, decode.p.Role)
	}
	return &Workflow{prefill: prefill, decode: decode}, nil
}

// Disaggregated reports whether the workflow plans prefill and decode.
func (w *Workflow) Disaggregated() bool { return w.single == nil }

// Plan decides where the request goes. It changes no state outside rc.
func (w *Workflow) Plan(ctx context.Context, rc *Context) (Plan, error) {
	if w.single != nil {
		d, err := w.single.Select(ctx, rc)
		return Plan{Single: d}, err
	}
	pd, err := w.prefill.Select(ctx, rc)
	if err != nil {
		return Plan{Disaggregated: true, Prefill: pd}, err
	}
	PrefillPick.Set(rc, &rc.Candidates[pd.Pick()])
	if err := w.decode.Prepare(ctx, rc); err != nil {
		return Plan{Disaggregated: true, Prefill: pd}, err
	}
	dd, err := w.decode.Choose(rc)
	return Plan{Disaggregated: true, Prefill: pd, Decode: dd}, err
}
