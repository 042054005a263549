package auth

import (
	"fmt"
	"strings"
)

// Scope is a set of permissions, one bit each.
type Scope uint8

// The scopes a key may hold.
const (
	// ScopeInference is the OpenAI data plane: completions, chat
	// completions, the model list and tokenize.
	ScopeInference Scope = 1 << iota
	// ScopeAdmin is the control plane: cell and pod state, drain, dry-run
	// route, snapshots, metrics.
	ScopeAdmin
	// ScopeEvents is publishing KV events (EventPublisher.Publish).
	ScopeEvents
	// ScopeRoute is a cell's dry-run routing decision over gRPC
	// (CellService.Route): globald's probe. The admin scope includes it.
	ScopeRoute
	// ScopeReplica is streaming a cell's index snapshot to another replica
	// (CellService.StreamSnapshot). The admin scope includes it.
	ScopeReplica

	// ScopeAll is every scope.
	ScopeAll = ScopeInference | ScopeAdmin | ScopeEvents | ScopeRoute | ScopeReplica
)

// scopeNames are the scopes' names, by bit, as String writes them.
var scopeNames = []struct {
	s    Scope
	name string
}{{ScopeInference, "inference"}, {ScopeAdmin, "admin"}, {ScopeEvents, "events"}, {ScopeRoute, "route"}, {ScopeReplica, "replica"}}

// ParseScope returns the scope named s ("inference", "admin", "events",
// "route", "replica").
func ParseScope(s string) (Scope, error) {
	for _, n := range scopeNames {
		if n.name == s {
			return n.s, nil
		}
	}
	return 0, fmt.Errorf("auth: unknown scope %q (want inference, admin, events, route or replica)", s)
}

// Has reports whether s holds every scope of want. The admin scope holds
// route and replica too: the control plane covers the probe and the
// snapshot.
func (s Scope) Has(want Scope) bool {
	if s&ScopeAdmin != 0 {
		s |= ScopeRoute | ScopeReplica
	}
	return s&want == want
}

// String returns the scopes' names joined by "+", "none" for none.
func (s Scope) String() string {
	var parts []string
	for _, n := range scopeNames {
		if s&n.s != 0 {
			parts = append(parts, n.name)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}
