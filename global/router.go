package global

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/zeebo/xxh3"
	"go.opentelemetry.io/otel/attribute"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cell/blockhash"
	"github.com/cellrouter/cellrouter/cell/telemetry"
)

// Request is what the global router needs of a request.
type Request struct {
	Model, CacheSalt string
	// TokenIDs is the prompt as tokens; Prompt the text when there are none.
	TokenIDs []uint32
	Prompt   string
}

// Decision is where a request goes and why.
type Decision struct {
	// Order lists the cells to try, best first (indices into Views).
	Order []int
	Views []CellView
	// Candidates are the searched cells with their estimates; Answers the
	// probes' answers (empty on the cold path).
	Candidates []Candidate
	Answers    []ProbeAnswer
	// Cold is true when no summary knew the prefix.
	Cold bool
	// Blocks is the request's chain length.
	Blocks int
	// Took is the decision time, probes included.
	Took time.Duration
}

// Router decides which cell takes a request. It is safe for concurrent use.
type Router struct {
	cfg    Config
	dir    Directory
	prober Prober
	hasher blockhash.Hasher
	tr     *telemetry.Tracer

	mu       sync.Mutex
	draining map[string]bool
}

// NewRouter returns a router over dir, probing with pr.
func NewRouter(cfg Config, dir Directory, pr Prober) (*Router, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h, err := blockhash.NewHasher(cfg.BlockSize)
	if err != nil {
		return nil, err
	}
	return &Router{cfg: cfg, dir: dir, prober: pr, hasher: h, tr: telemetry.NewTracer(tracerName, nil), draining: map[string]bool{}}, nil
}

// views returns the directory's cells with the router's draining marks.
func (rt *Router) views() []CellView {
	vs := rt.dir.Cells()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.draining) == 0 {
		return vs
	}
	out := make([]CellView, len(vs))
	copy(out, vs)
	for i := range out {
		if rt.draining[out[i].ID] {
			out[i].Draining = true
		}
	}
	return out
}

// SetDraining marks a cell draining (or not); it reports whether it changed.
func (rt *Router) SetDraining(cell string, on bool) bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	was := rt.draining[cell]
	if on {
		rt.draining[cell] = true
	} else {
		delete(rt.draining, cell)
	}
	return was != on
}

// chain hashes the request's tokens as the cells do (the cells' default
// profile seeds with the model and the cache salt).
func (rt *Router) chain(req *Request) []blockhash.Hash {
	if len(req.TokenIDs) == 0 {
		return nil
	}
	seed := blockhash.Seed(blockhash.Keys{Model: req.Model, CacheSalt: req.CacheSalt})
	return rt.hasher.Chain(seed, req.TokenIDs, nil)
}

// Decide searches the summaries, probes the candidates and orders the
// cells. Nothing in any cell changes.
func (rt *Router) Decide(ctx context.Context, req *Request) (*Decision, error) {
	start := time.Now()
	views := rt.views()
	chain := rt.chain(req)
	_, span := rt.tr.Get().Start(ctx, "global.summary_lookup")
	cands, cold := Search(rt.cfg.Search, views, chain, xxh3.HashString(req.Model+"\x00"+firstBytes(req.Prompt, 256)))
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("cellrouter.candidates", len(cands)), attribute.Bool("cellrouter.cold", cold),
			attribute.Int("cellrouter.cells", len(views)))
	}
	span.End()
	d := &Decision{Views: views, Candidates: cands, Cold: cold, Blocks: len(chain)}
	if len(cands) == 0 {
		d.Took = time.Since(start)
		return d, ErrNoCell
	}
	if cold {
		for _, c := range cands {
			d.Order = append(d.Order, c.Cell)
		}
	} else {
		probe := &cellv1.RouteRequest{Model: req.Model, TokenIds: req.TokenIDs, Prompt: req.Prompt, MaxCandidates: 1}
		if req.CacheSalt != "" {
			probe.ExtraKeys = []string{req.CacheSalt}
		}
		d.Answers = probeAll(ctx, rt.tr, rt.prober, rt.cfg.ProbeTimeout, views, cands, probe)
		d.Order = Choose(rt.cfg.Choose, d.Answers, len(chain))
	}
	d.Order = appendFallbacks(d.Order, views, rt.cfg.MaxAttempts)
	d.Took = time.Since(start)
	return d, nil
}

// appendFallbacks adds the least loaded other usable cells until order
// holds attempts cells, so a hand-off that fails before its first byte has
// somewhere to go. It selects them in one pass instead of sorting every
// cell.
func appendFallbacks(order []int, views []CellView, attempts int) []int {
	for len(order) < attempts {
		best := -1
		for i := range views {
			if !views[i].usable() || slices.Contains(order, i) {
				continue
			}
			if best < 0 || loadOf(&views[i]) < loadOf(&views[best]) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		order = append(order, best)
	}
	return order
}

func firstBytes(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Cells returns the router's current view of the cells (draining marks
// included), for operators and tools.
func (rt *Router) Cells() []CellView { return rt.views() }
