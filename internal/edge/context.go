package edge

import (
	"context"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// TenantHeader carries the tenant a request acts for from one tier to the
// next (globald to a cell, a cell to its pods). Servers believe it only
// from a verified peer and set it themselves otherwise.
const TenantHeader = "X-Cellrouter-Tenant"

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p auth.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal a guard admitted the request of ctx
// for, and false outside a guarded handler.
func PrincipalFrom(ctx context.Context) (auth.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(auth.Principal)
	return p, ok
}
