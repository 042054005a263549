package cell

import (
	"context"
	"net/http"
	"time"

	"github.com/cellrouter/cellrouter/internal/decisions"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// DecisionsPath serves the cell's recent decisions (GET, admin scope);
// DecisionsPath/{id} one of them by request id.
const DecisionsPath = "/v1/cell/decisions"

// DecisionRecord is one of the cell's recent routing decisions: the
// request id, trace id, time, tenant, model, match source (path), pod,
// matched blocks, status, durations and the explanation captured when the
// decision was made (a *cellv1.Explanation cut to decisions.top_k pods).
type DecisionRecord = decisions.Record

// RecentDecisions returns the cell's recent data-plane decisions, newest
// first (at most decisions.size; none when the ring is off). The records
// are copies; their explanations must not be modified.
func (c *Cell) RecentDecisions() []DecisionRecord { return c.decisions.Recent() }

// Decision returns the recent decision of request id (its X-Request-Id),
// if the ring still holds it.
func (c *Cell) Decision(id string) (DecisionRecord, bool) { return c.decisions.Get(id) }

// beginRecord starts the decision record of a data-plane request when the
// ring is on (nil otherwise): it fixes the request id (the client's
// X-Request-Id, or one made up and set on r for the pod to see), the trace
// id, the tenant's name and the model.
func (c *Cell) beginRecord(ctx context.Context, r *http.Request, start time.Time, model string) *DecisionRecord {
	p, _ := edge.PrincipalFrom(r.Context())
	rec := c.decisions.Begin(ctx, r, start, model, p.TenantName())
	if rec != nil {
		rec.Cell = c.cfg.CellID
	}
	return rec
}

// endRecord adds a finished record to the ring.
func (c *Cell) endRecord(rec *DecisionRecord, start time.Time) { c.decisions.End(rec, start) }

// statusRecorder remembers the status a refusal writes, for its record.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}
