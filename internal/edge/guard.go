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
	// certificate of the tier's CA): every scope, and the tenant it names
	// in TenantHeader. A cell trusts globald this way; globald, whose
	// clients are the outside world, does not.
	TrustPeers bool
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
	// peerTenant is the tenant a peer named.
	peerTenant string
}

// admit decides a request needing scope need: its principal and, for the
// data plane (limit), its tenant's ticket, or the refusal.
func (g *Guard) admit(c credentials, need auth.Scope, limit bool) (auth.Principal, auth.Ticket, error) {
	keys := g.keys.Load()
	if c.peer && g.cfg.TrustPeers {
		p := auth.Principal{Peer: true, Scopes: auth.ScopeAll}
		if name := c.peerTenant; name != "" && auth.ValidTenantName(name) {
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
		return p, auth.Ticket{}, nil
	}
	if keys == nil {
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

// done ends a request admit let through.
func (g *Guard) done(p auth.Principal, tk auth.Ticket, limit bool) {
	g.lim.Release(tk)
	if limit && !p.Peer && p.KeyID != "" {
		g.m.inflightAdd(p.TenantName(), -1)
	}
}
