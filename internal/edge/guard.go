package edge

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// GuardConfig configures a Guard.
type GuardConfig struct {
	// TrustPeers makes the guard believe a verified peer (a client
	// certificate of the tier's CA): the scopes of the roles its
	// certificate names (auth.ParsePeerURIs), and, for the global role,
	// the tenant it names in TenantHeader. A cell trusts globald this way;
	// globald, whose clients are the outside world, does not.
	TrustPeers bool
	// DefaultPeerRoles are the roles of a verified peer whose certificate
	// names none; nil means auth.RoleGlobal (what globald needs of a cell,
	// and nothing more).
	DefaultPeerRoles []auth.Role
	// KeepAuthorization leaves the Authorization header of a request
	// authenticated by key for the handler to forward: globald keeps it
	// when its hop to the cells is not mutually authenticated, so that a
	// cell with keys of its own can check it. Otherwise the key stops at
	// the guard.
	KeepAuthorization bool
	// Now is the clock of the tenants' limits; nil means time.Now.
	Now func() time.Time
	// Budget bounds the data plane's buffered request bodies (see
	// Budget); nil is unlimited.
	Budget *Budget
	// TenantMaxConcurrent is the in-flight bound of a tenant whose key
	// file entry sets none (Limits.TenantMaxConcurrent); 0 is unlimited.
	TenantMaxConcurrent int
}

// Guard decides who each request acts for and whether it may go on. It is
// safe for concurrent use; SetKeys swaps the key table under live traffic.
type Guard struct {
	cfg  GuardConfig
	keys atomic.Pointer[auth.Table]
	lim  *auth.Limiter
	m    *Metrics
}

// NewGuard returns a guard without keys (authentication off) until SetKeys.
func NewGuard(cfg GuardConfig, m *Metrics) *Guard {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	lim := auth.NewLimiter()
	lim.SetDefaultConcurrent(cfg.TenantMaxConcurrent)
	return &Guard{cfg: cfg, lim: lim, m: m}
}

// SetKeys makes t the key table; nil turns authentication off. Tenants that
// are gone lose their limiter state once their requests end.
func (g *Guard) SetKeys(t *auth.Table) {
	g.keys.Store(t)
	n := 0
	if t != nil {
		n = t.Len()
		g.lim.Forget(func(name string) bool { return t.Tenant(name) != nil })
	}
	g.m.setKeys(n)
}

// LoadKeyFile parses a key file (data[0], as package reload hands it) and
// makes it current; on error the current table stays.
func (g *Guard) LoadKeyFile(data [][]byte) error {
	t, err := auth.ParseKeyFile(data[0])
	g.m.Reloaded("keys", err)
	if err != nil {
		return err
	}
	g.SetKeys(t)
	return nil
}

// Enabled reports whether keys are required.
func (g *Guard) Enabled() bool { return g.keys.Load() != nil }

// credentials is what a request presents, whatever its protocol.
type credentials struct {
	// authorization holds the Authorization values (HTTP header or gRPC
	// metadata).
	authorization []string
	// peer says the connection's client certificate was verified.
	peer bool
	// peerURIs are the URI names of the peer's certificate.
	peerURIs []string
	// peerTenant is the tenant a peer named.
	peerTenant string
}

// admit decides a request needing scope need: its principal and, for the
// data plane (limit), its tenant's ticket, or the refusal.
//
// A verified peer of a guard that trusts peers acts with the scopes of its
// certificate's roles (peer); when they lack need and the request carries
// an API key, the key decides instead, as for any client. Without keys,
// every other request acts with every scope (authentication off).
func (g *Guard) admit(c credentials, need auth.Scope, limit bool) (auth.Principal, auth.Ticket, error) {
	keys := g.keys.Load()
	if c.peer && g.cfg.TrustPeers {
		p, err := g.peer(c, keys, need)
		if err == nil || keys == nil || len(c.authorization) == 0 {
			if err != nil {
				g.m.reject("forbidden")
			}
			return p, auth.Ticket{}, err
		}
	} else if keys == nil {
		return auth.Principal{Scopes: auth.ScopeAll}, auth.Ticket{}, nil
	}
	var p auth.Principal
	var err error
	switch len(c.authorization) {
	case 0:
		err = &auth.Error{Err: auth.ErrMissingKey}
	case 1:
		p, err = keys.Authenticate(c.authorization[0])
	default:
		err = &auth.Error{Err: auth.ErrInvalidKey, Detail: "more than one Authorization header"}
	}
	if err == nil {
		err = p.Allow(need)
	}
	if err != nil {
		switch {
		case errors.Is(err, auth.ErrMissingKey):
			g.m.reject("missing_key")
		case errors.Is(err, auth.ErrInvalidKey):
			g.m.reject("invalid_key")
		default:
			g.m.reject("forbidden")
		}
		return p, auth.Ticket{}, err
	}
	if !limit {
		return p, auth.Ticket{}, nil
	}
	tk, err := g.lim.Acquire(p.Tenant, g.cfg.Now())
	switch {
	case errors.Is(err, auth.ErrRateLimited):
		g.m.tenant(p.TenantName(), "rate_limited")
	case errors.Is(err, auth.ErrConcurrency):
		g.m.tenant(p.TenantName(), "concurrency_limited")
	default:
		g.m.tenant(p.TenantName(), "admitted")
		g.m.inflightAdd(p.TenantName(), 1)
	}
	return p, tk, err
}

// peer returns the principal of a verified peer: the scopes of the roles
// its certificate names (GuardConfig.DefaultPeerRoles when it names none),
// the pods a publisher may publish for, and, for a role that may name one
// (global), the tenant it names. The error is an *auth.Error wrapping
// ErrForbidden when the roles lack need or the certificate's names do not
// parse.
func (g *Guard) peer(c credentials, keys *auth.Table, need auth.Scope) (auth.Principal, error) {
	def := g.cfg.DefaultPeerRoles
	if def == nil {
		def = []auth.Role{auth.RoleGlobal}
	}
	grant, err := auth.ParsePeerURIs(c.peerURIs, def)
	if err != nil {
		return auth.Principal{Peer: true}, &auth.Error{Err: auth.ErrForbidden, Need: need, Detail: err.Error(), Peer: true}
	}
	p := auth.Principal{Peer: true, Scopes: grant.Scopes, Roles: grant.Roles, Pods: grant.Pods}
	if name := c.peerTenant; grant.Tenant && name != "" && auth.ValidTenantName(name) {
		if keys != nil {
			p.Tenant = keys.Tenant(name)
		}
		if p.Tenant == nil {
			// A tenant of the peer's key file this node does not know:
			// it is named in metrics and headers; its limits were
			// counted where it entered.
			p.Tenant = &auth.Tenant{Name: name, Isolated: true}
		}
	}
	if err := p.Allow(need); err != nil {
		return p, &auth.Error{Err: auth.ErrForbidden, Need: need, Tenant: p.TenantName(), Detail: "the certificate's role " + grant.Roles + " lacks the scope", Peer: true}
	}
	return p, nil
}

// done ends a request admit let through.
func (g *Guard) done(p auth.Principal, tk auth.Ticket, limit bool) {
	g.lim.Release(tk)
	if limit && !p.Peer && p.KeyID != "" {
		g.m.inflightAdd(p.TenantName(), -1)
	}
}
