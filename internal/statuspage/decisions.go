package statuspage

import (
	"net/url"
	"time"
)

// Decision is one recent routing decision as a status page lists it. The
// daemons fill it from their own record of decisions (a ring of recent
// decisions): the seam between that record and the page is one function,
// Handler.Decisions, so the record's own type stays its own.
type Decision struct {
	// ID names the decision; the page links it to its explanation at
	// /v1/<tier>/decisions/<id>.
	ID string
	// TraceID is the request's OpenTelemetry trace id ("" when none).
	TraceID string
	// At is when the decision was made.
	At time.Time
	// Tenant, Model and Path are the request's tenant, model and routing
	// path (globald: summary_chat, cold_text...; celld: the match source).
	Tenant, Model, Path string
	// Target is where the request went: a cell (globald) or a pod (celld).
	Target string
	// MatchedBlocks is the prefix the target held, in blocks (-1: not
	// routed).
	MatchedBlocks int
	// Status is the HTTP status answered (0: not known yet).
	Status int
	// Duration is the request's total time.
	Duration time.Duration
}

// DecisionRow is a Decision with its links, as the template shows it.
type DecisionRow struct {
	Decision
	// Link is the decision's explanation; TraceLink its trace in the
	// tracing UI ("" without a trace URL template).
	Link, TraceLink string
}

// DecisionsView is the table of recent decisions.
type DecisionsView struct {
	// Available is false when the daemon keeps no record of decisions
	// (Handler.Decisions nil): the page says so.
	Available bool
	// Rows are the decisions shown, newest first.
	Rows []DecisionRow
	// TargetName heads the target column ("cell" or "pod").
	TargetName string
	// Now is the page's clock.
	Now time.Time
}

// DecisionPath is the path of a decision's explanation on a daemon of the
// tier ("cell" or "global"): /v1/<tier>/decisions/<id>, the id escaped.
func DecisionPath(tier, id string) string {
	return "/v1/" + url.PathEscape(tier) + "/decisions/" + url.PathEscape(id)
}

// decisionsView builds the table from src's decisions (newest first), at
// most limit of them.
func decisionsView(c Config, tier, target string, now time.Time, src func() []Decision, limit int) DecisionsView {
	v := DecisionsView{Available: src != nil, TargetName: target, Now: now}
	if src == nil {
		return v
	}
	ds := src()
	if limit > 0 && len(ds) > limit {
		ds = ds[:limit]
	}
	v.Rows = make([]DecisionRow, len(ds))
	for i, d := range ds {
		v.Rows[i] = DecisionRow{Decision: d, TraceLink: c.TraceURL(d.TraceID)}
		if d.ID != "" {
			v.Rows[i].Link = DecisionPath(tier, d.ID)
		}
	}
	return v
}
