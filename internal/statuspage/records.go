package statuspage

import "github.com/cellrouter/cellrouter/internal/decisions"

// FromRing returns the "last decisions" source of a daemon's decision ring
// (nil when the ring is off, so the page says there is none). target names
// where a record went: its pod at a cell, its cell at the global tier.
func FromRing(r *decisions.Ring, target func(decisions.Record) string) func() []Decision {
	if r == nil {
		return nil
	}
	return func() []Decision {
		recs := r.Recent()
		out := make([]Decision, len(recs))
		for i, rec := range recs {
			matched := rec.MatchedBlocks
			if rec.Cell == "" && rec.Pod == "" {
				matched = -1 // it went nowhere
			}
			out[i] = Decision{ID: rec.ID, TraceID: rec.TraceID, At: rec.Time, Tenant: rec.Tenant, Model: rec.Model,
				Path: rec.Path, Target: target(rec), MatchedBlocks: matched, Status: rec.Status, Duration: rec.Duration}
		}
		return out
	}
}
