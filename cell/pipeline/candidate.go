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
//
// A Candidate holds only what filters and scorers read on every decision,
// in 64 bytes (one cache line); the names and address, read for the
// winner only, sit behind the embedded *Target. A pass over 256 candidates
// then touches about 256 cache lines instead of 420, and the cell copies
// about half as much per request (BenchmarkDecision measures it).
type Candidate struct {
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
	// HeldBlocks is how many blocks the index holds for the pod (its
	// cached prefixes, from its KV events): with TotalBlocks, how full its
	// cache is (see Evicts).
	HeldBlocks int
	// RouteTemplates counts the pod's active requests by route template
	// (looped-transformer requests batch well with their own template).
	RouteTemplates map[string]int

	// Target names the candidate; it is shared, never nil for a candidate
	// the cell built, and must not be modified.
	*Target
}

// Evicts returns how many cached blocks the pod is expected to evict
// because it stores another stored blocks: stored times the pod's fullness f =
// HeldBlocks / TotalBlocks (at most 1), and 0 when its cache size is
// unknown. A full cache evicts one cached block for every block it stores.
// A cache with free room evicts nothing at once, but the blocks stored take
// room the pod's later requests would have filled, so its evictions come
// that much sooner and take younger blocks; the fuller the cache, the
// sooner: f of a block for each. The linear form spreads new prefixes over
// the emptier caches long before any is full, instead of filling a few
// pods until they evict (see plugins.KVCost's pressure).
func (c *Candidate) Evicts(stored int) float64 {
	if c.TotalBlocks <= 0 || stored <= 0 || c.HeldBlocks <= 0 {
		return 0
	}
	return float64(stored) * min(1, float64(c.HeldBlocks)/float64(c.TotalBlocks))
}

// Target is the part of a candidate that names it: who it is and where
// requests go. It changes only when the cell's pod list does.
type Target struct {
	// Pod is the pod id; Holder the index holder (the pod, or pod#rank).
	Pod, Holder string
	// Address is where requests go (host:port).
	Address string
}
