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

	// ScopeAll is every scope: what an authenticated peer of the tier may
	// do.
	ScopeAll = ScopeInference | ScopeAdmin | ScopeEvents
)

// scopeNames are the scopes' names in the key file, by bit.
var scopeNames = []struct {
	s    Scope
	name string
}{{ScopeInference, "inference"}, {ScopeAdmin, "admin"}, {ScopeEvents, "events"}}

// ParseScope returns the scope named s ("inference", "admin", "events").
func ParseScope(s string) (Scope, error) {
	for _, n := range scopeNames {
		if n.name == s {
			return n.s, nil
		}
	}
	return 0, fmt.Errorf("auth: unknown scope %q (want inference, admin or events)", s)
}

// Has reports whether s holds every scope of want.
func (s Scope) Has(want Scope) bool { return s&want == want }

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
