package edge

import (
	"net/http"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// AdmitHeader admits a data-plane request known only by its headers, as a
// picker (package internal/epp) knows the requests a gateway routes: the
// API key in Authorization decides, with the tenant's limits, exactly as
// Require(auth.ScopeInference) decides an HTTP request, except that no
// peer is trusted (the gateway's connection vouches for no client), so
// TenantHeader is never believed. release ends the admission (the
// tenant's concurrency ticket) and must be called once; on a refusal it is
// nil and err is answered by WriteHTTP.
func (g *Guard) AdmitHeader(h http.Header) (p auth.Principal, release func(), err error) {
	p, tk, err := g.admit(credentials{authorization: h.Values("Authorization")}, auth.ScopeInference, true)
	if err != nil {
		return p, nil, err
	}
	return p, func() { g.done(p, tk, true) }, nil
}
