package cell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// CacheHintHeader carries the chosen pod's cache state to the pod: the
// tier of its deepest matched block and how many blocks matched, e.g.
// "tier=gpu; blocks=40; block_size=16". Engines or their sidecars may use it
// to prefetch offloaded blocks; others ignore it.
const CacheHintHeader = "X-Cellrouter-Cache-Hint"

// PodHeader and CellIDHeader tell the client which pod and cell served its
// request (load generators count requests per pod with them).
const (
	PodHeader    = "X-Cellrouter-Pod"
	CellIDHeader = "X-Cellrouter-Cell"
)

// Headers for per-request overrides of the default profile's parameters.
const (
	OverlapWeightHeader = "X-Cellrouter-Kv-Overlap-Weight"
	TemperatureHeader   = "X-Cellrouter-Router-Temperature"
)

// routeExt are the body fields looped/router transformers add to name their
// route (read only when the body mentions them).
type routeExt struct {
	RouteTemplate *string `json:"route_template"`
	RouteStep     *uint32 `json:"route_step"`
}

// pipelineRequest turns a parsed OpenAI request into the pipeline's view.
func pipelineRequest(r *http.Request, body []byte, req *openai.Request) (*pipeline.Request, error) {
	pr := &pipeline.Request{
		Chat: req.Kind == openai.KindChat, Model: req.Model, LoRA: "", CacheSalt: req.CacheSalt,
		MaxTokens: req.MaxTokens, Stream: req.Stream, Header: r.Header,
	}
	if pr.Chat {
		for _, m := range req.Messages {
			pr.Messages = append(pr.Messages, pipeline.Message{Role: m.Role, Content: m.Content})
		}
	} else if req.Prompt.IsTokens() {
		pr.TokenIDs = req.Prompt.Tokens
	} else {
		pr.Prompt = req.Prompt.Text
	}
	if bytes.Contains(body, []byte(`"route_template"`)) {
		var ext routeExt
		if err := json.Unmarshal(body, &ext); err != nil {
			return nil, err
		}
		if ext.RouteTemplate != nil {
			pr.RouteTemplate, pr.HasRoute = *ext.RouteTemplate, true
			if ext.RouteStep != nil {
				pr.RouteStep = *ext.RouteStep
			}
		}
	}
	if err := parseOverrides(r.Header, &pr.Overrides); err != nil {
		return nil, err
	}
	return pr, nil
}

// serveInference is the data plane of /v1/completions and
// /v1/chat/completions: parse, decide, execute.
func (c *Cell) serveInference(kind openai.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := c.tr.Start(ctx, "cell.request", c.requestSpan...)
		defer span.End()
		w, access := c.access.Begin(ctx, w, r)
		defer access.End()
		c.rm.inflight.Inc()
		defer c.rm.inflight.Dec()

		body, err := openai.ReadBody(w, r, c.cfg.Routing.MaxBodyBytes)
		if err != nil {
			openai.WriteRequestError(w, err)
			return
		}
		oreq, err := openai.ParseRequest(kind, body)
		if err != nil {
			openai.WriteRequestError(w, err)
			return
		}
		access.SetModel(oreq.Model)
		if !c.modelServed(oreq.Model) {
			openai.WriteModelNotFound(w, oreq.Model)
			return
		}
		// A prompt longer than its model takes is refused before it costs
		// tokenizer time; its tokens are checked once the pipeline has
		// them.
		limit := c.cfg.Routing.PromptLimits.For(oreq.Model)
		if err := limit.CheckText(oreq); err != nil {
			c.refusePrompt(w, err)
			return
		}
		if oreq.Prompt.IsTokens() {
			if err := limit.CheckTokens(false, len(oreq.Prompt.Tokens)); err != nil {
				c.refusePrompt(w, err)
				return
			}
		}
		// The tenant's cache salt joins the request's identity here and
		// goes to the pod in the body.
		if body, err = edge.Salt(r.Context(), body, oreq); err != nil {
			edge.WriteHTTP(w, err)
			return
		}
		preq, err := pipelineRequest(r, body, oreq)
		if err != nil {
			openai.WriteRequestError(w, err)
			return
		}
		d, err := c.router.decide(ctx, preq)
		if err != nil {
			c.rm.decisions.WithLabelValues(c.cfg.Routing.Profile, "error").Inc()
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			status, body := decideFailure(err)
			c.logFailure("cell: cannot route request", status, err, "path", r.URL.Path, "model", preq.Model)
			openai.WriteErrorBody(w, status, body)
			return
		}
		defer c.router.release(d)
		if toks, ok := pipeline.Tokens.Get(d.rc); ok {
			if err := limit.CheckTokens(preq.Chat, len(toks)); err != nil {
				c.refusePrompt(w, err)
				return
			}
		}
		c.rm.decisionTime.Observe(d.took.Seconds())
		c.execute(w, r.WithContext(ctx), body, preq, d, start, access)
	}
}

// refusePrompt answers a prompt over its model's limit (a
// *openai.PromptTooLongError): 400 context_length_exceeded, counted in
// cellrouter_limit_hits_total{limit="prompt_bytes"|"prompt_tokens"}.
func (c *Cell) refusePrompt(w http.ResponseWriter, err error) {
	var pe *openai.PromptTooLongError
	if !errors.As(err, &pe) {
		openai.WriteRequestError(w, err)
		return
	}
	if pe.Tokens {
		c.sec.m.Hit(edge.LimitPromptTokens)
	} else {
		c.sec.m.Hit(edge.LimitPromptBytes)
	}
	pe.Write(w)
}

// execute carries a plan out through the proxy, keeping the load tracker,
// sessions, metrics and spans up to date.
func (c *Cell) execute(w http.ResponseWriter, r *http.Request, body []byte, preq *pipeline.Request, d *decision, start time.Time, access *logging.Entry) {
	rc := d.rc
	hashes, _ := pipeline.BlockHashes.Get(rc)
	match, _ := pipeline.Match.Get(rc)
	blocks := len(hashes)
	outBlocks := 0
	if preq.MaxTokens > 0 {
		outBlocks = (preq.MaxTokens + c.cfg.Events.BlockSize - 1) / c.cfg.Events.BlockSize
	}
	// The pod set is read once more as the request leaves: a pod that
	// turned not Ready, or was deleted, since the decision gets nothing new.
	view := c.pods.Load()
	targets := func(dec pipeline.Decision) []proxy.Target {
		out := make([]proxy.Target, 0, len(dec.Order))
		for _, ci := range dec.Order {
			cand := &rc.Candidates[ci]
			if !view.Routable(cand.Pod) {
				continue
			}
			t := proxy.Target{Pod: cand.Pod, Address: cand.Address}
			if len(out) == 0 {
				t.Header = c.cacheHint(cand, match, hashes)
			}
			out = append(out, t)
		}
		return out
	}
	depthOf := func(pod string) int {
		for _, cand := range rc.Candidates {
			if cand.Pod == pod && cand.HasSlot && match != nil {
				return match.Depth(cand.Slot)
			}
		}
		return 0
	}
	// storedDepthOf is the part of pod's match that counts as cached in the
	// load tracker's pending prefill: not speculative blocks, which the
	// request that will store them may still be prefilling (a request
	// that starts before then computes them again), so that a pod a burst
	// of one new prefix piled onto shows the queue it has and the cost's
	// queue wait spreads the rest. Approximate blocks (a pod without
	// events learns them at first token, when they are stored) count.
	storedDepthOf := func(pod string) int {
		s, ok := slotOf(rc, pod)
		if !ok || match == nil || match.Depth(s) == 0 || match.Approximate().Has(s) {
			return depthOf(pod)
		}
		c.ix.SplitLearned(hashes, match, index.BitmapOf(s))
		return match.ExactDepth(s)
	}
	// What the cell learns from its own routing (see run_learned.go): the
	// chosen pod's blocks are speculative from the attempt until its events
	// confirm them, and a pod without events holds them, approximately,
	// from its first token on.
	speculate := func(pod string) {
		if s, ok := slotOf(rc, pod); ok {
			c.learner.Speculate(s, hashes, time.Now())
			c.touchMatched(s, hashes, match)
		}
	}
	touch := func(pod string) {
		if s, ok := slotOf(rc, pod); ok {
			c.learner.Touch(s, hashes, time.Now())
		}
	}
	main := d.plan.Single
	if d.plan.Disaggregated {
		main = d.plan.Decode
	}
	c.rm.decisions.WithLabelValues(main.Profile, "routed").Inc()
	source := c.matchSource(rc, main, match, hashes)
	c.rm.matchSource.WithLabelValues(source).Inc()
	access.SetDecision(source, d.took, blocks)
	if main.FailedOpen || d.plan.Prefill.FailedOpen {
		c.rm.failOpen.Inc()
	}
	session := r.Header.Get(c.cfg.Routing.SessionHeader)

	var ticket *load.Ticket
	var upstream trace.Span
	answered := false // the relayed answer is a success (2xx)
	leg := "single"
	hooks := proxy.Hooks{
		OnAttempt: func(t proxy.Target, attempt int) {
			if ticket != nil {
				c.router.tracker.Done(ticket)
			}
			prefill := blocks - storedDepthOf(t.Pod)
			if d.plan.Disaggregated && leg == "decode" {
				prefill = 0 // the KV cache arrives from the prefill pod
			}
			ticket = c.router.tracker.Start(t.Pod, blocks+outBlocks, prefill, preq.RouteTemplate)
			speculate(t.Pod)
		},
		OnRequest: func(t proxy.Target, out *http.Request) {
			var ctx = r.Context()
			if c.tr.Enabled() { // the attributes cost allocations; only for a recording span
				ctx, upstream = c.tr.Get().Start(ctx, "cell.upstream", trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(telemetry.CellKey.String(c.cfg.CellID), attribute.String("cellrouter.pod", t.Pod), attribute.String("cellrouter.leg", leg),
						attribute.Int("cellrouter.matched_blocks", depthOf(t.Pod)), attribute.Int("cellrouter.blocks", blocks)))
			}
			telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(out.Header))
			out.Header.Set(PodSetVersionHeader, strconv.FormatUint(view.Version, 10))
		},
		OnRetry: func(t proxy.Target, attempt int, err error) {
			c.rm.retries.Inc()
			if upstream != nil {
				upstream.RecordError(err)
				upstream.End()
				upstream = nil
			}
		},
		OnPrefillDone: func(t proxy.Target, res proxy.Result) {
			c.rm.upstream.WithLabelValues("prefill", proxy.StatusClass(res.Status)).Inc()
			c.observeUsage(res.Usage, depthOf(t.Pod), blocks)
			if res.Err == nil && res.Status/100 == 2 {
				touch(t.Pod) // the prefill pod computed the prompt's blocks
			}
			if ticket != nil {
				c.router.tracker.Done(ticket)
				ticket = nil
			}
			if upstream != nil {
				upstream.End()
				upstream = nil
			}
			leg = "decode"
		},
		OnStatus: func(t proxy.Target, status int) { answered = status/100 == 2 },
		OnResponse: func(t proxy.Target, h http.Header) {
			h.Set(PodHeader, t.Pod)
			h.Set(CellIDHeader, c.cfg.CellID)
			h.Set(proxy.MatchedBlocksHeader, strconv.Itoa(depthOf(t.Pod)))
		},
		OnFirstByte: func(t proxy.Target) {
			c.rm.ttft.Observe(time.Since(start).Seconds())
			if ticket != nil {
				c.router.tracker.FirstToken(ticket)
			}
			c.router.sessions.Record(session, t.Pod)
			if answered {
				touch(t.Pod) // an error answer computed nothing
			}
		},
		OnDone: func(t proxy.Target, res proxy.Result) {
			c.rm.upstream.WithLabelValues(leg, proxy.StatusClass(res.Status)).Inc()
			if !d.plan.Disaggregated {
				c.observeUsage(res.Usage, depthOf(t.Pod), blocks)
			}
			if ticket != nil {
				c.router.tracker.Done(ticket)
				ticket = nil
			}
			if upstream != nil {
				upstream.SetAttributes(attribute.Int("http.response.status_code", res.Status))
				if res.Err != nil {
					upstream.RecordError(res.Err)
				}
				upstream.End()
				upstream = nil
			}
		},
	}
	var err error
	if d.plan.Disaggregated {
		leg = "prefill"
		err = c.proxy.ForwardDisaggregated(w, r, body, targets(d.plan.Prefill), targets(d.plan.Decode), hooks)
	} else {
		err = c.proxy.Forward(w, r, body, targets(d.plan.Single), hooks)
	}
	if ticket != nil { // a call that ended without OnDone
		c.router.tracker.Done(ticket)
	}
	if err != nil {
		trace.SpanFromContext(r.Context()).RecordError(err)
		c.logFailure("cell: upstream call failed", proxy.StatusOf(err), err, "path", r.URL.Path, "model", preq.Model)
	}
	if errors.Is(err, proxy.ErrMidStream) {
		// The pod failed after bytes reached the client: abort the
		// connection so the client sees a broken stream, not a clean end.
		panic(http.ErrAbortHandler)
	}
}

// slotOf returns the index slot of pod among the decision's candidates.
func slotOf(rc *pipeline.Context, pod string) (index.Slot, bool) {
	for i := range rc.Candidates {
		if c := &rc.Candidates[i]; c.Pod == pod && c.HasSlot {
			return c.Slot, true
		}
	}
	return 0, false
}

// Sources of a decision's match, for cellrouter_route_match_source_total.
const (
	sourceExact       = "exact"
	sourceSpeculative = "speculative"
	sourceApproximate = "approximate"
	sourceNone        = "none"
)

// matchSource says where the picked pod's match came from: the engine's
// events alone (exact), speculative blocks at its end, the approximate
// index (a pod without events), or nothing matched.
func (c *Cell) matchSource(rc *pipeline.Context, dec pipeline.Decision, m *index.MatchResult, hashes []index.BlockHash) string {
	if m == nil || len(dec.Order) == 0 {
		return sourceNone
	}
	cand := &rc.Candidates[dec.Order[0]]
	if !cand.HasSlot || m.Depth(cand.Slot) == 0 {
		return sourceNone
	}
	if m.Approximate().Has(cand.Slot) {
		return sourceApproximate
	}
	c.ix.SplitLearned(hashes, m, index.BitmapOf(cand.Slot))
	if m.ExactDepth(cand.Slot) < m.Depth(cand.Slot) {
		return sourceSpeculative
	}
	return sourceExact
}

// observeUsage records the predicted and realised cache hit of one call.
func (c *Cell) observeUsage(u *proxy.Usage, depth, blocks int) {
	if blocks > 0 {
		c.rm.predictedHit.Observe(float64(depth) / float64(blocks))
	}
	c.rm.predictedTok.Add(float64(depth * c.cfg.Events.BlockSize))
	if u == nil || u.PromptTokens == 0 {
		return
	}
	c.rm.promptTok.Add(float64(u.PromptTokens))
	c.rm.realisedTok.Add(float64(u.CachedTokens))
	c.rm.realisedHit.Observe(float64(u.CachedTokens) / float64(u.PromptTokens))
}

// cacheHint is the CacheHintHeader for the chosen pod.
func (c *Cell) cacheHint(cand *pipeline.Candidate, m *index.MatchResult, hashes []index.BlockHash) http.Header {
	if m == nil || !cand.HasSlot {
		return nil
	}
	depth := m.Depth(cand.Slot)
	if depth == 0 {
		return nil
	}
	tier := "gpu"
	switch c.ix.TierOf(cand.Slot, hashes[depth-1]) {
	case index.TierCPU:
		tier = "cpu"
	case index.TierStorage:
		tier = "storage"
	}
	return http.Header{CacheHintHeader: {fmt.Sprintf("tier=%s; blocks=%d; block_size=%d", tier, depth, c.cfg.Events.BlockSize)}}
}

// modelTargets are the pods that may answer for the cell's models: the
// healthy ones that are not draining.
func (c *Cell) modelTargets() []proxy.Target {
	var targets []proxy.Target
	for _, cand := range c.router.candidates(nil) {
		if cand.Healthy && !cand.Draining {
			targets = append(targets, proxy.Target{Pod: cand.Pod, Address: cand.Address})
		}
	}
	return targets
}

// serveModels relays GET /v1/models from a healthy pod.
func (c *Cell) serveModels(w http.ResponseWriter, r *http.Request) {
	targets := c.modelTargets()
	if len(targets) == 0 {
		openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
			"no pod of the cell is available to list the models", "", "no_pod_available"))
		return
	}
	if err := c.proxy.Forward(w, r, nil, targets, proxy.Hooks{}); err != nil {
		c.logFailure("cell: listing models failed", proxy.StatusOf(err), err)
	}
}

// serveModel answers GET /v1/models/{id} from a healthy pod's model list.
func (c *Cell) serveModel(w http.ResponseWriter, r *http.Request) {
	if err := c.proxy.ServeModel(w, r, r.PathValue("id"), c.modelTargets()); err != nil {
		c.logFailure("cell: retrieving a model failed", proxy.StatusOf(err), err, "model", r.PathValue("id"))
	}
}

// logFailure logs an error the client got a clean message for, with the
// details (pods, addresses, the pods' answers) the message leaves out: at
// warning level when the cell or its pods failed (a 5xx, a response cut
// short), at debug level for the client's own faults and a client that went
// away.
func (c *Cell) logFailure(msg string, status int, err error, args ...any) {
	c.log.Log(context.Background(), proxy.FailureLevel(status, err), msg, append(args, "status", status, "err", err)...)
}
