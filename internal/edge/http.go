package edge

import (
	"net/http"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// Require returns h behind the guard: a request goes on only when it acts
// for a principal holding need (0: any principal), and, for the data plane
// (need ScopeInference), within its tenant's limits; otherwise it is
// answered by WriteHTTP. The handler finds the principal with
// PrincipalFrom; TenantHeader holds its tenant (and nothing a client
// sent), and the Authorization header is gone when the guard checked the
// key, unless GuardConfig.KeepAuthorization. A data-plane request admitted
// this far reserves its body in GuardConfig.Budget before the handler
// reads it, and holds it until the handler returns (503 past it).
func (g *Guard) Require(need auth.Scope, h http.Handler) http.Handler {
	limit := need == auth.ScopeInference
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := credentials{authorization: r.Header.Values("Authorization"), peer: tlsconf.VerifiedPeer(r.TLS),
			peerURIs: tlsconf.PeerURIs(r.TLS), peerTenant: r.Header.Get(TenantHeader)}
		p, tk, err := g.admit(c, need, limit)
		if err != nil {
			WriteHTTP(w, err)
			return
		}
		defer g.done(p, tk, limit)
		if limit {
			var release func()
			if w, r, release, err = g.cfg.Budget.hold(w, r, g.m); err != nil {
				WriteHTTP(w, err)
				return
			}
			defer release()
		}
		r.Header.Del(TenantHeader)
		if p.Tenant != nil {
			r.Header.Set(TenantHeader, p.Tenant.Name)
		}
		if p.KeyID != "" && !g.cfg.KeepAuthorization {
			r.Header.Del("Authorization")
		}
		h.ServeHTTP(w, r.WithContext(WithPrincipal(r.Context(), p)))
	})
}
