package auth

import (
	"fmt"
	"strings"
)

// Role is what a peer of the tier is, as its certificate says: it decides
// the peer's scopes (RoleScopes) instead of the certificate granting all.
type Role string

// The roles a certificate may name.
const (
	// RoleGlobal is globald calling a cell: the data plane it hands off
	// (inference, with the tenant it names in the tenant header) and the
	// probe (route). Not admin, not events.
	RoleGlobal Role = "global"
	// RoleCell is a cell replica calling another: the snapshot a new
	// replica starts from (replica).
	RoleCell Role = "cell"
	// RolePublisher is a publisher sidecar: events, for the pods its
	// certificate names (PodURIPrefix) and no others.
	RolePublisher Role = "publisher"
	// RoleAdmin is an operator's tool: the control plane (admin, which
	// holds route and replica: Scope.Has).
	RoleAdmin Role = "admin"
	// RoleNone grants nothing: what a cell can be told to give
	// certificates that name no role (tls.default_peer_roles).
	RoleNone Role = "none"
)

// RoleURIPrefix and PodURIPrefix start the URI subject alternative names
// that carry a certificate's roles and, for a publisher, its pods:
//
//	urn:cellrouter:role:global
//	urn:cellrouter:role:publisher
//	urn:cellrouter:pod:vllm-0        (an exact pod id)
//	urn:cellrouter:pod:vllm-*        (a prefix; urn:cellrouter:pod:* is any pod)
//
// A URN, not a SPIFFE ID, since a certificate may carry several and a
// SPIFFE certificate carries exactly one; other URIs (a SPIFFE ID among
// them) are ignored.
const (
	RoleURIPrefix = "urn:cellrouter:role:"
	PodURIPrefix  = "urn:cellrouter:pod:"
)

// MaxPeerURIs bounds the URIs of one certificate that ParsePeerURIs reads.
const MaxPeerURIs = 1024

// roles lists the roles a certificate may name, with their scopes and
// whether the peer may name the tenant a request acts for.
var roles = []struct {
	r      Role
	scopes Scope
	tenant bool
}{
	{RoleGlobal, ScopeInference | ScopeRoute, true},
	{RoleCell, ScopeReplica, false},
	{RolePublisher, ScopeEvents, false},
	{RoleAdmin, ScopeAdmin, false},
	{RoleNone, 0, false},
}

// ParseRole returns the role named s.
func ParseRole(s string) (Role, error) {
	for _, r := range roles {
		if string(r.r) == s {
			return r.r, nil
		}
	}
	return "", fmt.Errorf("auth: unknown role %q (want global, cell, publisher, admin or none)", s)
}

// RoleURI returns the URI naming role r in a certificate.
func RoleURI(r Role) string { return RoleURIPrefix + string(r) }

// PodURI returns the URI naming a pod pattern in a certificate.
func PodURI(pattern string) string { return PodURIPrefix + pattern }

// PeerGrant is what a verified certificate grants its holder.
type PeerGrant struct {
	// Roles are the certificate's roles (or the default), joined by "+".
	Roles string
	// Scopes are the union of the roles' scopes.
	Scopes Scope
	// Tenant says the peer may name the tenant a request acts for.
	Tenant bool
	// Pods are the pods a publisher may publish for: the certificate's pod
	// URIs; a publisher certificate without any may publish for none.
	// Nil when the grant has no events scope.
	Pods *PodSet
}

// ParsePeerURIs returns the grant of a certificate with the URI subject
// alternative names uris: the union of the roles it names, or of the roles
// def when it names none. A role that is not known, a malformed pod pattern, or pod
// URIs without the publisher role is an error (the certificate then
// grants nothing: a typo must not widen or silently narrow access).
func ParsePeerURIs(uris []string, def []Role) (PeerGrant, error) {
	if len(uris) > MaxPeerURIs {
		return PeerGrant{}, fmt.Errorf("auth: certificate has %d URIs, over the limit of %d", len(uris), MaxPeerURIs)
	}
	var named []Role
	var pods []string
	for _, u := range uris {
		switch {
		case strings.HasPrefix(u, RoleURIPrefix):
			r, err := ParseRole(u[len(RoleURIPrefix):])
			if err != nil {
				return PeerGrant{}, err
			}
			named = append(named, r)
		case strings.HasPrefix(u, PodURIPrefix):
			pods = append(pods, u[len(PodURIPrefix):])
		}
	}
	if len(named) == 0 {
		for _, r := range def {
			if _, err := ParseRole(string(r)); err != nil {
				return PeerGrant{}, err
			}
		}
		named = def
	}
	var g PeerGrant
	names := make([]string, 0, len(named))
	for _, r := range named {
		for _, d := range roles {
			if d.r == r {
				g.Scopes |= d.scopes
				g.Tenant = g.Tenant || d.tenant
			}
		}
		names = append(names, string(r))
	}
	g.Roles = strings.Join(names, "+")
	if !g.Scopes.Has(ScopeEvents) {
		if len(pods) > 0 {
			return PeerGrant{}, fmt.Errorf("auth: certificate names pods but not the publisher role")
		}
		return g, nil
	}
	set, err := ParsePods(pods)
	if err != nil {
		return PeerGrant{}, fmt.Errorf("auth: certificate %v", err)
	}
	if set == nil {
		set = &PodSet{} // a publisher without pods publishes for none
	}
	g.Pods = set
	return g, nil
}
