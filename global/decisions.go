package global

import (
	"context"
	"net/http"
	"time"

	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// DecisionsPath serves the global tier's recent decisions (GET, admin
// scope); DecisionsPath/{id} one of them by request id.
const DecisionsPath = "/v1/global/decisions"

// DecisionRecord is one of the global tier's recent routing decisions: the
// request id, trace id, time, tenant, model, route path (summary_chat,
// cold_tokens...), the cell that served it and the pod the cell says
// served (else the one its probe named), the matched blocks the probe (or,
// unprobed, the cell) reported, status, durations and the
// explanation captured when the decision was made (a
// *globalv1.Explanation cut to the top K cells).
type DecisionRecord = decisions.Record

// RecentDecisions returns the global tier's recent data-plane decisions,
// newest first (at most Config.Decisions.Size; none when the ring is off).
// The records are copies; their explanations must not be modified.
func (g *Global) RecentDecisions() []DecisionRecord { return g.decisions.Recent() }

// Decision returns the recent decision of request id (its X-Request-Id),
// if the ring still holds it.
func (g *Global) Decision(id string) (DecisionRecord, bool) { return g.decisions.Get(id) }

// beginRecord starts the decision record of a data-plane request when the
// ring is on (nil otherwise): the request id (the client's X-Request-Id,
// or one made up and set on r, so the cell and its pod see it), the trace
// id, the tenant's name and the model.
func (g *Global) beginRecord(ctx context.Context, r *http.Request, start time.Time, model string) *DecisionRecord {
	p, _ := edge.PrincipalFrom(r.Context())
	return g.decisions.Begin(ctx, r, start, model, p.TenantName())
}

// endRecord adds a finished record to the ring.
func (g *Global) endRecord(rec *DecisionRecord, start time.Time) { g.decisions.End(rec, start) }
