package auth

import "time"

// Limits are a tenant's request limits (zero fields are unlimited, but
// for MaxConcurrent).
type Limits struct {
	// RequestsPerSecond is the sustained rate; 0 is unlimited.
	RequestsPerSecond float64
	// Burst is the bucket's depth: requests admitted at once after a quiet
	// spell (at least 1 when RequestsPerSecond is set).
	Burst int
	// MaxConcurrent bounds the requests in flight; 0 takes the limiter's
	// default (Limiter.SetDefaultConcurrent), a negative value is
	// unlimited.
	MaxConcurrent int
}

// Tenant is one tenant of a key file. A Table's tenants are immutable.
type Tenant struct {
	// Name is the tenant's name.
	Name string
	// Isolated says the tenant's prefix cache is its own (see Salt).
	Isolated bool
	// Limits are the tenant's limits.
	Limits Limits
	// Priority is the band of the tenant's requests (the zero value is
	// standard); a request may lower it (Principal.RequestPriority).
	Priority Priority
	// Weight is the tenant's fair-share weight within its band; 0 (a
	// tenant a peer named that this node's key file lacks) counts as 1
	// (FairWeight).
	Weight float64
	// MaxQueueWait bounds the wait of the tenant's requests in a cell's
	// flow-control queue; 0 takes the cell's default.
	MaxQueueWait time.Duration
}

// FairWeight returns t's fair-share weight: Weight, or 1 when t is nil or
// sets none.
func (t *Tenant) FairWeight() float64 {
	if t == nil || !(t.Weight > 0) {
		return 1
	}
	return t.Weight
}

// Principal is who a request acts for: the tenant and scopes of its key,
// or what an authenticated peer of the tier asserted.
type Principal struct {
	// Tenant is nil for a request without a tenant: authentication off, or
	// a peer that forwarded none.
	Tenant *Tenant
	// Scopes are what the request may do.
	Scopes Scope
	// KeyID names the key ("" without one).
	KeyID string
	// Peer says the request came from an authenticated peer of the tier
	// (a client certificate of the tier's CA). A peer of the global role
	// vouches for Tenant: its key was checked, its limits counted and its
	// cache salt set where it entered the tier.
	Peer bool
	// Roles are the peer's roles (a certificate's, or the default), ""
	// for a key.
	Roles string
	// Pods are the pods the principal may publish events for (MayPublish);
	// nil is any pod the cell knows.
	Pods *PodSet
}

// MayPublish reports whether p may publish events for pod (its id, or any
// name the cell maps to it).
func (p Principal) MayPublish(pod string) bool { return p.Pods.Match(pod) }

// TenantName returns the tenant's name, "" for none.
func (p Principal) TenantName() string {
	if p.Tenant == nil {
		return ""
	}
	return p.Tenant.Name
}

// Allow returns nil when p holds the scope need, else an *Error wrapping
// ErrForbidden.
func (p Principal) Allow(need Scope) error {
	if p.Scopes.Has(need) {
		return nil
	}
	return &Error{Err: ErrForbidden, Need: need, Tenant: p.TenantName(), KeyID: p.KeyID}
}

// keyEntry is one key of a Table.
type keyEntry struct {
	tenant *Tenant
	scopes Scope
	id     string
	pods   *PodSet
}

// Table is a parsed key file: the keys by hash and the tenants by name. It
// is immutable and safe for concurrent use; a reload builds a new one.
type Table struct {
	keys    map[KeyHash]keyEntry
	tenants map[string]*Tenant
	order   []*Tenant
}

// Authenticate returns the principal of the key in an Authorization header
// value, or an *Error wrapping ErrMissingKey or ErrInvalidKey.
func (t *Table) Authenticate(header string) (Principal, error) {
	key, err := ParseBearer(header)
	if err != nil {
		return Principal{}, err
	}
	h := HashKey(key)
	e, ok := t.keys[h]
	if !ok {
		return Principal{}, &Error{Err: ErrInvalidKey, KeyID: h.ID(), Detail: "no such key"}
	}
	return Principal{Tenant: e.tenant, Scopes: e.scopes, KeyID: e.id, Pods: e.pods}, nil
}

// Tenant returns the tenant called name, nil when there is none.
func (t *Table) Tenant(name string) *Tenant { return t.tenants[name] }

// Tenants returns the tenants in the key file's order.
func (t *Table) Tenants() []*Tenant { return t.order }

// Len returns the number of keys.
func (t *Table) Len() int { return len(t.keys) }
