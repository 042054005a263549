package pipeline

import (
	"context"
	"math/rand/v2"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// Context is one routing decision in progress: the request, the cell's
// candidates, the plug-ins' slot values and what each stage decided. A
// Context is used by one goroutine; Reset makes it reusable.
type Context struct {
	// Req is the request being routed.
	Req *Request
	// Candidates are the cell's routing targets at the start of the
	// decision. Plug-ins must not reorder or resize it.
	Candidates []Candidate
	// Rand is the decision's source of randomness (tie-breaks, softmax
	// sampling); injected so that decisions are reproducible in tests.
	Rand *rand.Rand
	// Ctx is the context of the running decision (set by Prepare).
	Ctx context.Context
	// Phase is the phase the running selector picks for (its profile's
	// role): RoleBoth for an aggregated request.
	Phase Role

	match  *index.MatchResult // reusable answer buffer of the prefix match
	hashes []blockhash.Hash   // reusable block hash buffer

	all      []int       // 0..len(Candidates)-1, kept across decisions
	values   []slotValue // by slot id
	active   []int       // surviving candidate indices, after Filter
	spare    []int       // the other buffer of the filter pass
	rejected []Rejection
	scores   []float64 // per active candidate, weighted sum of scorers
	order    []int
	failOpen bool

	explain    *Explain // nil: not explaining this decision (SetExplain)
	explainBuf *Explain // kept across decisions for its buffers
}

// Rejection says which filter removed a candidate, and why.
type Rejection struct {
	Candidate int
	Filter    string
	Reason    string
}

// NewContext returns a context for req over the given candidates.
func NewContext(req *Request, cands []Candidate, rng *rand.Rand) *Context {
	return &Context{Req: req, Candidates: cands, Rand: rng}
}

// Reset clears the context for another decision, keeping its buffers.
func (rc *Context) Reset(req *Request, cands []Candidate) {
	for i := range rc.values {
		if v := &rc.values[i]; v.set {
			v.box.zero()
			v.set = false
		}
	}
	rc.Req, rc.Candidates, rc.Ctx = req, cands, nil
	rc.active, rc.rejected, rc.scores = rc.active[:0], rc.rejected[:0], rc.scores[:0]
	rc.failOpen = false
	rc.explain = nil
}

// everyone returns the indices of all candidates, built once per size.
func (rc *Context) everyone() []int {
	for i := len(rc.all); i < len(rc.Candidates); i++ {
		rc.all = append(rc.all, i)
	}
	return rc.all[:len(rc.Candidates)]
}

// Active returns the indices of the candidates that passed the filters so
// far. The slice is the context's; do not keep it.
func (rc *Context) Active() []int { return rc.active }

// Rejected returns the filter decisions of this routing.
func (rc *Context) Rejected() []Rejection { return rc.rejected }

// FailedOpen reports whether every candidate was filtered and the decision
// fell back to the candidates that passed the hard filters only.
func (rc *Context) FailedOpen() bool { return rc.failOpen }

// MatchScratch returns the context's reusable index answer buffer (a
// MatchResult is large; a pooled context keeps one instead of allocating
// one per decision).
func (rc *Context) MatchScratch() *index.MatchResult {
	if rc.match == nil {
		rc.match = new(index.MatchResult)
	}
	return rc.match
}

// Scores returns the weighted scores of the last Choose, aligned with
// Active(). The slice is the context's; do not keep it.
func (rc *Context) Scores() []float64 {
	if len(rc.scores) < len(rc.active) {
		return nil
	}
	return rc.scores[:len(rc.active)]
}

// Reject records that filter removed candidate i, for reason.
func (rc *Context) Reject(i int, filter, reason string) {
	rc.rejected = append(rc.rejected, Rejection{Candidate: i, Filter: filter, Reason: reason})
}

// HashScratch returns the context's reusable block-hash buffer, empty, for
// a preparer to append a request's chain to (valid until the next Reset).
func (rc *Context) HashScratch() []blockhash.Hash {
	if rc.hashes == nil {
		rc.hashes = make([]blockhash.Hash, 0, 256)
	}
	return rc.hashes[:0]
}
