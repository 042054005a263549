package decisions

import (
	"context"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Begin starts the record of a data-plane request r when the ring is on
// (nil otherwise): its request id (RequestID), the trace id of ctx, the
// arrival time, the model and the tenant's name. The tier fills in the
// rest and hands it to End.
func (r *Ring) Begin(ctx context.Context, req *http.Request, start time.Time, model, tenant string) *Record {
	if r == nil {
		return nil
	}
	rec := &Record{ID: RequestID(req), Time: start, Model: model, Tenant: tenant}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		rec.TraceID = sc.TraceID().String()
	}
	return rec
}

// End adds a finished record (nil: none was begun) with the request's
// duration since start.
func (r *Ring) End(rec *Record, start time.Time) {
	if rec == nil {
		return
	}
	rec.Duration = time.Since(start)
	r.Add(*rec)
}
