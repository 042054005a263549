package enginesim

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// Response headers that expose the timing model's accounting, so tests and
// load generators can compare runs without measuring wall-clock time.
const (
	// HeaderPod names the pod that served the request.
	HeaderPod = "X-Enginesim-Pod"
	// HeaderPrefillMs is the modelled (unscaled) prefill time in
	// milliseconds: uncached, untransferred prompt tokens times
	// PrefillPerToken.
	HeaderPrefillMs = "X-Enginesim-Prefill-Ms"
	// HeaderPrefillTokens is the number of prompt tokens computed.
	HeaderPrefillTokens = "X-Enginesim-Prefill-Tokens"
	// HeaderCachedTokens is the prefix-cache hit in tokens (the usage's
	// cached_tokens).
	HeaderCachedTokens = "X-Enginesim-Cached-Tokens"
	// HeaderQueueMs is the wall-clock time spent waiting for a slot in the
	// running batch, in milliseconds.
	HeaderQueueMs = "X-Enginesim-Queue-Ms"
)

// PathTokenize, PathHealth and PathMetrics are vLLM's paths of the
// tokenizer, health and metrics endpoints.
const (
	PathTokenize = "/tokenize"
	PathHealth   = "/health"
	PathMetrics  = "/metrics"
)

// serveHTTP routes a request.
func (p *Pod) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if !p.enter() {
		openai.WriteError(w, http.StatusServiceUnavailable, openai.TypeServer, "enginesim: pod is shutting down")
		return
	}
	defer p.inflight.Done()
	method := http.MethodPost
	switch r.URL.Path {
	case openai.PathModels, PathHealth, PathMetrics:
		method = http.MethodGet
	}
	if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
		switch r.URL.Path {
		case openai.PathCompletions, openai.PathChatCompletions, openai.PathModels, PathTokenize, PathHealth, PathMetrics:
			w.Header().Set("Allow", method)
			openai.WriteError(w, http.StatusMethodNotAllowed, openai.TypeInvalidRequest, "enginesim: method "+r.Method+" not allowed on "+r.URL.Path)
			return
		}
	}
	switch r.URL.Path {
	case openai.PathCompletions:
		p.serveGenerate(w, r, openai.KindCompletion)
	case openai.PathChatCompletions:
		p.serveGenerate(w, r, openai.KindChat)
	case openai.PathModels:
		p.serveModels(w)
	case PathTokenize:
		p.serveTokenize(w, r)
	case PathHealth:
		w.WriteHeader(http.StatusOK)
	case PathMetrics:
		p.serveMetrics(w)
	default:
		openai.WriteError(w, http.StatusNotFound, openai.TypeInvalidRequest, "enginesim: no route for "+r.URL.Path)
	}
}

// serveGenerate serves a completion or chat completion request.
func (p *Pod) serveGenerate(w http.ResponseWriter, r *http.Request, kind openai.Kind) {
	body, err := openai.ReadBody(w, r, p.cfg.MaxBodyBytes)
	if err != nil {
		p.stats.rejected.Add(1)
		openai.WriteRequestError(w, err)
		return
	}
	g, aerr := p.parseGenerate(kind, body)
	if aerr != nil {
		p.stats.rejected.Add(1)
		aerr.write(w)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	if !p.generate(ctx, w, g) {
		p.stats.cancelled.Add(1)
	}
}

// prefillPlan is the timing model's account of one prefill.
type prefillPlan struct {
	chain       []blockhash.Hash
	cached      int // prompt tokens hit in the prefix cache
	transferred int // prompt tokens received from a remote prefill beyond the hit
	computed    int // prompt tokens computed here
	duration    time.Duration
}

// plan computes the prefill of g against the cache as it is now. The hit
// never covers the last prompt token: like vLLM, a full hit recomputes the
// last block so that there is a token to sample from.
func (p *Pod) plan(g *genRequest, chain []blockhash.Hash) prefillPlan {
	bs := p.cfg.BlockSize
	n := len(g.tokens)
	hit := p.cache.lookup(chain)
	if hit*bs >= n {
		hit = (n - 1) / bs
	}
	pl := prefillPlan{chain: chain, cached: hit * bs}
	done := pl.cached
	if g.remotePrefill() {
		covered := min(n, len(g.kv.RemoteBlockIDs)*bs)
		if covered > done {
			pl.transferred = covered - done
			done = covered
		}
	}
	pl.computed = n - done
	pl.duration = time.Duration(pl.computed) * p.cfg.PrefillPerToken
	return pl
}

// generate runs g: it waits for a slot in the running batch, prefills
// (sleeping the modelled time), commits the prompt's blocks to the cache
// and publishes the events, then decodes and answers. It returns false
// when ctx ended first (the client went away or the pod closed): the slot
// is freed at once and nothing more is written.
func (p *Pod) generate(ctx context.Context, w http.ResponseWriter, g *genRequest) bool {
	chain := p.cache.chain(g.tokens, g.salt, nil)
	start := time.Now()
	blocks := requestBlocks(g, p.cfg.BlockSize)
	p.load.wait(g.lora)
	if err := p.sched.acquire(ctx, blocks); err != nil {
		p.load.start(g.lora, blocks, false)
		return false
	}
	p.load.start(g.lora, blocks, true)
	defer p.sched.release(blocks)
	defer p.load.finish(g.lora, blocks)
	queued := time.Since(start)
	pl := p.plan(g, chain)
	if err := p.sleep(ctx, pl.duration); err != nil {
		return false
	}
	p.cache.commit(chain, g.tokens, g.salt)
	p.stats.prefills.Add(1)
	p.stats.promptTokens.Add(uint64(len(g.tokens)))
	p.stats.cachedTokens.Add(uint64(pl.cached))
	p.stats.transferred.Add(uint64(pl.transferred))

	h := w.Header()
	h.Set(HeaderPod, p.id)
	h.Set(HeaderPrefillMs, strconv.FormatFloat(float64(pl.duration)/float64(time.Millisecond), 'f', -1, 64))
	h.Set(HeaderPrefillTokens, strconv.Itoa(pl.computed))
	h.Set(HeaderCachedTokens, strconv.Itoa(pl.cached))
	h.Set(HeaderQueueMs, strconv.FormatFloat(float64(queued)/float64(time.Millisecond), 'f', 3, 64))
	out := newOutput(p, g, pl)
	if g.stream {
		return out.stream(ctx, w)
	}
	return out.respond(ctx, w)
}

// sleep waits d scaled by the time scale, or until ctx ends; it returns
// ctx's error in the latter case.
func (p *Pod) sleep(ctx context.Context, d time.Duration) error {
	d = p.cfg.scaled(d)
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
