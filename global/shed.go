package global

import (
	"net/http"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// ShedCode is the OpenAI error code of a sheddable request refused because
// every cell would queue it.
const ShedCode = "fleet_saturated"

// requestBand decides the request's priority band where it enters the
// fleet: its tenant's (from its API key), or lower when the client's
// auth.PriorityHeader says so (a key may only lower its band). It sets the
// header to the band decided, so that the cell, which trusts globald for
// it, takes that band without deriving it again. A header that names no
// band is answered 400 here and ok is false.
func (g *Global) requestBand(w http.ResponseWriter, r *http.Request) (p auth.Priority, ok bool) {
	pr, _ := edge.PrincipalFrom(r.Context())
	p, err := pr.RequestPriority(r.Header.Get(auth.PriorityHeader))
	if err != nil {
		edge.WriteHTTP(w, err)
		return p, false
	}
	r.Header.Set(auth.PriorityHeader, p.String())
	return p, true
}

// shed refuses a sheddable request with 429 (OpenAI's error shape, with
// Retry-After the shortest announced wait, at least a second) when every
// usable cell announces a wait above Bands.ShedAfter for its band, before
// any probe or hand-off; it reports whether it did. Other bands are never
// refused here: their cells queue them.
func (g *Global) shed(w http.ResponseWriter, p auth.Priority, now time.Time) bool {
	if p != auth.PrioritySheddable {
		return false
	}
	full, wait := saturatedFor(g.cfg.Bands, g.rt.views(), gossip.BandOf(p), now)
	if !full {
		return false
	}
	g.m.shed.WithLabelValues(p.String()).Inc()
	w.Header().Set("Retry-After", retryAfterSeconds(wait))
	openai.WriteErrorBody(w, http.StatusTooManyRequests, openai.NewErrorBody(edge.TypeRequests,
		"every cell is saturated for sheddable requests; retry after the time in Retry-After", "", ShedCode))
	return true
}

// retryAfterSeconds renders d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}
