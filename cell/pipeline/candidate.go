package pipeline

import "github.com/cellrouter/cellrouter/cell/index"

// Role is the inference phase a pod serves.
type Role uint8

// The roles. A RoleBoth pod can take either phase.
const (
	RoleBoth Role = iota
	RolePrefill
	RoleDecode
)

// String names the role as configuration spells it.
func (r Role) String() string {
	switch r {
	case RolePrefill:
		return "prefill"
	case RoleDecode:
		return "decode"
	}
	return "both"
}

// Serves reports whether a pod of role r can take phase want (RoleBoth
// meaning an aggregated request that does both).
func (r Role) Serves(want Role) bool {
	return r == RoleBoth || r == want
}

// Candidate is one routing target of the cell (a pod, or one data-parallel
// rank of a pod) as the pipeline sees it when a decision starts.
type Candidate struct {
	// The fields every filter and scorer reads come first, so that a pass
	// over 256 candidates touches one cache line of each.

	// Healthy is false for pods the registry considers dead; Draining for
	// pods an operator is draining.
	Healthy, Draining bool
	// HasSlot is false for a pod that has published no event yet (it holds
	// nothing the index knows); Slot is the holder's index slot.
	HasSlot bool
	Slot    index.Slot
	// Role is the phase the pod serves.
	Role Role
	// ActiveRequests and ActiveBlocks are the router's view of the pod's
	// load: requests in flight and the KV blocks they occupy (prefill
	// blocks counted until their first token).
	ActiveRequests, ActiveBlocks int
	// PrefillBlocks is the part of ActiveBlocks still being prefilled.
	PrefillBlocks int
	// TotalBlocks is the pod's KV cache size in blocks (0 when unknown).
	TotalBlocks int

	// Pod is the pod id; Holder the index holder (the pod, or pod#rank).
	Pod, Holder string
	// Address is where requests go (host:port).
	Address string
	// RouteTemplates counts the pod's active requests by route template
	// (looped-transformer requests batch well with their own template).
	RouteTemplates map[string]int
}
