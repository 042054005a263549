package pipeline

import "context"

// Stage is one of the five stages of a routing decision, in their order.
type Stage uint8

// The stages.
const (
	StagePrepare Stage = iota
	StageFilter
	StageScore
	StagePick
	StageExecute
)

// String names the stage as profiles spell it.
func (s Stage) String() string {
	return [...]string{"prepare", "filter", "score", "pick", "execute"}[s]
}

// Plugin is what every plug-in declares about itself. The framework uses
// the declarations to validate a profile at start-up.
type Plugin interface {
	// Type is the plug-in's registered type name, e.g. "kv-cost".
	Type() string
	// Reads and Writes list the slots the plug-in reads and writes.
	Reads() []SlotRef
	Writes() []SlotRef
}

// Requirer is implemented by plug-ins that need other plug-ins (by type
// name) earlier in the same profile.
type Requirer interface {
	Requires() []string
}

// Preparer computes request facts once per decision (token ids, block
// hashes, index matches) and writes them to slots. It may block (a remote
// tokenizer) and must honour ctx.
type Preparer interface {
	Plugin
	Prepare(ctx context.Context, rc *Context) error
}

// Filter decides whether a candidate may take the request. It is called
// for every active candidate and must not block.
type Filter interface {
	Plugin
	// Keep reports whether candidate i stays, and why not.
	Keep(rc *Context, i int) (ok bool, reason string)
	// Hard reports whether the filter must hold even when every candidate
	// was filtered (alive, role); soft filters (load thresholds) are
	// dropped then, and the decision fails open to load-only routing.
	Hard() bool
}

// BatchFilter is an optional capability of a Filter: it filters a whole
// list of candidates in one call, appending the survivors of in to out and
// recording the others with rc.Reject. The framework prefers it; it must
// decide exactly as Keep does. Over 256 pods one call with a tight loop
// costs a fraction of 256 interface calls.
type BatchFilter interface {
	Filter
	KeepAll(rc *Context, in, out []int) []int
}

// Scorer rates the active candidates: out[k] is the score of candidate
// rc.Active()[k], higher is better. Scores of one scorer should lie in
// [0, 1] (except the cost scorer, see KVCost), so that profile weights mean
// what they say. Scorers must not block.
type Scorer interface {
	Plugin
	Score(rc *Context, out []float64)
}

// Picker chooses among the active candidates given their weighted scores
// (scores[k] for rc.Active()[k]) and returns a preference order of
// positions into Active(): the first is the pick, the rest are the
// fall-backs for retries before the first byte.
type Picker interface {
	Plugin
	Pick(rc *Context, scores []float64, order []int) []int
}
