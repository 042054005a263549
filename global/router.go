package global

import (
	"context"
	"github.com/cellrouter/cellrouter/gossip"
	"slices"
	"sync"
	"time"

	"github.com/zeebo/xxh3"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// Request is what the global router needs of a request.
type Request struct {
	Model, CacheSalt string
	// TokenIDs is the prompt as tokens; Prompt the text when there are none.
	TokenIDs []uint32
	Prompt   string
	// Chat says the prompt is Messages (a /v1/chat/completions request).
	Chat     bool
	Messages []tokenizer.Message
	// Band is the request's priority band: the cells' waits for it weigh
	// in the choice (see BandsConfig).
	Band gossip.Band
}

// Kind says what the request's prompt is.
func (r *Request) Kind() PromptKind {
	switch {
	case r.Chat:
		return PromptChat
	case len(r.TokenIDs) > 0 || r.Prompt == "":
		return PromptTokens
	}
	return PromptText
}

// Decision is where a request goes and why.
type Decision struct {
	// Order lists the cells to try, best first (indices into Views).
	Order []int
	Views []CellView
	// Candidates are the searched cells with their estimates; Answers the
	// probes' answers (empty on an unprobed cold path: see
	// SearchConfig.ProbeCold).
	Candidates []Candidate
	Answers    []ProbeAnswer
	// Cold is true when no summary knew the prefix (or the prompt could
	// not be tokenized, which is never probed).
	Cold bool
	// Prompt is the request's prompt kind; Untokenized is true for a text
	// prompt or chat the global tier could not tokenize (Tokenize says
	// why), which then went the cold path.
	Prompt      PromptKind
	Untokenized bool
	// Tokenize says how the prompt was tokenized (zero for token ids).
	Tokenize TokenizeInfo
	// Blocks is the request's chain length.
	Blocks int
	// Took is the decision time, probes included.
	Took time.Duration
	// Unprobed is true when the summary search left one candidate and the
	// data plane handed the request to it without a probe (see
	// Config.ProbeLone): there was nothing to choose between.
	Unprobed bool

	// gossiped are the directory's views (gossiped loads) the decision
	// was made from, for noteRouted.
	gossiped []CellView
}

// explainNotes is what an explanation needs that a Decision does not keep
// for itself. A decision that is explained fills the caller's notes; one
// that is not is given none, so explaining costs it nothing.
type explainNotes struct {
	// depths are the summaries' estimates the search was given.
	depths []gossip.CellDepth
	// chosen is how many cells of Order the search and the probes placed;
	// the rest are fall-backs appendFallbacks added.
	chosen int
}

// Router decides which cell takes a request. It is safe for concurrent use.
type Router struct {
	cfg    Config
	dir    Directory
	prober Prober
	hasher blockhash.Hasher
	tr     *telemetry.Tracer
	tok    *Tokenizer
	dist   *distances

	mu       sync.Mutex
	draining map[string]bool
	routed   routedLoads
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
	tok, err := NewTokenizer(cfg.Tokenize)
	if err != nil {
		return nil, err
	}
	return &Router{cfg: cfg, dir: dir, prober: pr, hasher: h, tr: telemetry.NewTracer(tracerName, nil), tok: tok, dist: newDistances(),
		draining: map[string]bool{}, routed: newRoutedLoads(cfg.RoutedLoadTTL)}, nil
}

// views returns the directory's cells with the router's draining marks
// and the load its own routing added since each cell last gossiped.
func (rt *Router) views() []CellView {
	vs, _, _ := rt.viewsAndGossiped()
	return vs
}

// viewsAndGossiped returns views(), the directory's own views (the
// gossiped loads), and, from an IndexedDirectory, the estimator of their
// depths (nil otherwise).
func (rt *Router) viewsAndGossiped() (views, gossiped []CellView, depths DepthsFunc) {
	var vs []CellView
	if ix, ok := rt.dir.(IndexedDirectory); ok {
		vs, depths = ix.CellsAndDepths()
	} else {
		vs = rt.dir.Cells()
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if len(rt.draining) == 0 && rt.routed.empty() {
		return vs, vs, depths
	}
	out := make([]CellView, len(vs))
	copy(out, vs)
	for i := range out {
		if rt.draining[out[i].ID] {
			out[i].Draining = true
		}
	}
	rt.routed.apply(out)
	return out, vs, depths
}

// noteRouted records the load the chosen cell takes on when the data
// plane hands the request to it (a dry run records nothing).
func (rt *Router) noteRouted(d *Decision) {
	if len(d.Order) == 0 {
		return
	}
	c := d.Order[0]
	if c >= len(d.gossiped) || d.gossiped[c].ID != d.Views[c].ID {
		return
	}
	// The cell takes the request on its probe answer, or as the lone
	// candidate or a cold prompt's cell handed it without a probe (a
	// burst of cold prompts would otherwise all see the same light cell);
	// not when it is only a fallback of failed probes.
	pick := -1
	if j := slices.IndexFunc(d.Answers, func(a ProbeAnswer) bool { return a.Cell == c && a.Err == nil }); j >= 0 {
		pick = int(d.Answers[j].Load)
	} else if !d.Unprobed && !(d.Cold && len(d.Answers) == 0) {
		return
	}
	rt.mu.Lock()
	rt.routed.note(&d.Views[c], d.gossiped[c].Load, d.Blocks, pick)
	rt.mu.Unlock()
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
func (rt *Router) chain(req *Request, toks []uint32) []blockhash.Hash {
	if len(toks) == 0 {
		return nil
	}
	seed := blockhash.Seed(blockhash.Keys{Model: req.Model, CacheSalt: req.CacheSalt})
	return rt.hasher.Chain(seed, toks, nil)
}

// tokenize returns the request's token ids: its own, or those of its text
// prompt or chat as the cells would tokenize them (nil when that failed;
// d.Tokenize says why).
func (rt *Router) tokenize(ctx context.Context, req *Request, views []CellView, d *Decision) []uint32 {
	if d.Prompt == PromptTokens {
		return req.TokenIDs
	}
	span := telemetry.NoopSpan()
	if rt.tr.Enabled() {
		ctx, span = rt.tr.Get().Start(ctx, "global.tokenize", trace.WithAttributes(attribute.String("cellrouter.prompt", d.Prompt.String())))
	}
	defer span.End()
	toks, info, err := rt.tok.Tokenize(ctx, req, views, nil)
	d.Tokenize = info
	if span.IsRecording() {
		span.SetAttributes(attribute.String("cellrouter.tokenize.source", info.Source), attribute.Int("cellrouter.tokens", len(toks)))
		if info.Cell != "" {
			span.SetAttributes(attribute.String("cellrouter.cell", info.Cell))
		}
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		d.Untokenized = true
		return nil
	}
	return toks
}

// coldKey names a prompt that has no tokens for the stable hash: its model
// and the start of its text (a chat's first message, so a conversation's
// turns stay together).
func coldKey(req *Request) uint64 {
	text := req.Prompt
	if req.Chat && len(req.Messages) > 0 {
		text = req.Messages[0].Content
	}
	return xxh3.HashString(req.Model + "\x00" + firstBytes(text, 256))
}

// Decide tokenizes a text prompt or chat, searches the summaries, probes
// the candidates and orders the cells. Nothing in any cell changes.
func (rt *Router) Decide(ctx context.Context, req *Request) (*Decision, error) {
	return rt.decide(ctx, req, true, nil)
}

// DecideExplained is Decide with the decision's explanation: every cell
// with what the search, the probes and the choice saw and decided (see
// explain). The explanation is nil when no decision was made.
func (rt *Router) DecideExplained(ctx context.Context, req *Request) (*Decision, *globalv1.Explanation, error) {
	var notes explainNotes
	d, err := rt.decide(ctx, req, true, &notes)
	return d, rt.explain(d, &notes, 0), err
}

// decideToSend is Decide for a request the data plane sends at once: when
// the search leaves one candidate, the probe could change nothing (Choose
// has nothing to weigh it against, and a failed probe still leaves it
// first), so unless Config.ProbeLone the request goes to it without one,
// and its cell's picker decides in the hand-off itself, which reports the
// pick's match in MatchedHeader. That saves a round trip, the cell's
// second decision and the probe's gRPC framing.
func (rt *Router) decideToSend(ctx context.Context, req *Request, notes *explainNotes) (*Decision, error) {
	return rt.decide(ctx, req, rt.cfg.ProbeLone, notes)
}

// decide makes the decision. notes, when not nil, receives what its
// explanation needs (a copy of the summaries' estimates; nothing when nil).
func (rt *Router) decide(ctx context.Context, req *Request, probeLone bool, notes *explainNotes) (*Decision, error) {
	start := time.Now()
	views, gossiped, depthsOf := rt.viewsAndGossiped()
	d := &Decision{Views: views, Prompt: req.Kind(), gossiped: gossiped}
	toks := rt.tokenize(ctx, req, views, d)
	if err := rt.cfg.Prompts.For(req.Model).CheckTokens(req.Chat, len(toks)); err != nil {
		d.Took = time.Since(start)
		return d, err
	}
	chain := rt.chain(req, toks)
	_, span := rt.tr.Start(ctx, "global.summary_lookup")
	sc := rt.cfg.Search
	sc.PrefillWeight = rt.cfg.Choose.BlockWeight() // one weight for the bound and the choice
	sc.PressureWeight = rt.cfg.Choose.PressureWeight
	var cands []Candidate
	var cold bool
	var depths []gossip.CellDepth
	if depthsOf != nil {
		// Every cell's summary at once; the same candidates as Search.
		var buf [16]gossip.CellDepth
		depths = depthsOf(chain, buf[:0])
	} else {
		var buf [16]gossip.CellDepth // apart: the one above escapes
		depths = summaryDepths(views, chain, buf[:0])
	}
	cands, cold = SearchDepths(sc, views, nil, depths, chain, coldKey(req))
	if notes != nil {
		notes.depths = slices.Clone(depths)
	}
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("cellrouter.candidates", len(cands)), attribute.Bool("cellrouter.cold", cold),
			attribute.Int("cellrouter.cells", len(views)))
	}
	span.End()
	d.Candidates, d.Cold, d.Blocks = cands, cold, len(chain)
	if len(cands) == 0 {
		d.Took = time.Since(start)
		return d, ErrNoCell
	}
	// A cold prompt is probed when its tokens are known and there is a
	// choice to make (SearchConfig.ProbesCold).
	coldProbed := cold && sc.ProbesCold() && len(chain) > 0 && (len(cands) > 1 || probeLone)
	if (cold && !coldProbed) || (!cold && len(cands) == 1 && !probeLone) {
		for _, c := range cands {
			d.Order = append(d.Order, c.Cell)
		}
		d.Unprobed = !cold
	} else {
		probe := &cellv1.RouteRequest{Model: req.Model, TokenIds: toks, MaxCandidates: 1}
		if req.CacheSalt != "" {
			probe.ExtraKeys = []string{req.CacheSalt}
		}
		d.Answers = probeAll(ctx, rt.tr, rt.prober, rt.cfg.ProbeTimeout, views, cands, probe)
		for i := range d.Answers {
			a := &d.Answers[i]
			id := views[a.Cell].ID
			if a.Err == nil && !a.Opened {
				rt.tok.observeRTT(id, a.RTT)
				rt.dist.observe(id, a.RTT)
			}
			a.Distance = rt.dist.of(id)
		}
		chargeWaits(rt.cfg.Bands, d.Answers, views, req.Band, start)
		d.Order = Choose(rt.cfg.Choose, d.Answers, len(chain))
	}
	if cold {
		d.Order = preferReady(rt.cfg.Bands, d.Order, views, req.Band, start)
	}
	if notes != nil {
		notes.chosen = len(d.Order)
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

// Tokenizer returns the router's tokenizer (for metrics and tools).
func (rt *Router) Tokenizer() *Tokenizer { return rt.tok }

// Cells returns the router's current view of the cells (draining marks
// included), for operators and tools.
func (rt *Router) Cells() []CellView { return rt.views() }
