package cell

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/index"
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
func pipelineRequest(header http.Header, body []byte, req *openai.Request) (*pipeline.Request, error) {
	pr := &pipeline.Request{
		Chat: req.Kind == openai.KindChat, Model: req.Model, LoRA: "", CacheSalt: req.CacheSalt,
		MaxTokens: req.MaxTokens, Stream: req.Stream, Header: header,
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
	if err := parseOverrides(header, &pr.Overrides); err != nil {
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
		p, refuse := c.plan(ctx, r.Header, body, oreq, nil)
		if refuse != nil {
			refuse(w)
			return
		}
		defer c.router.release(p.d)
		c.execute(w, r.WithContext(ctx), p.body, p.preq, p.d, start, access)
	}
}

// planned is a request the pipeline decided: its body as the pod gets it
// (the tenant's salt in), the pipeline's view and the decision.
type planned struct {
	body []byte
	preq *pipeline.Request
	d    *decision
}

// plan is what both data planes (proxy mode here, picker mode in
// api_epp.go) do between a parsed body and a decision: the model check,
// the prompt limits, the tenant's salt, the pipeline among the candidates
// allow accepts (nil: all). A refusal is returned as the writer of its
// answer; otherwise the caller releases p.d.
func (c *Cell) plan(ctx context.Context, header http.Header, body []byte, oreq *openai.Request, allow func(string) bool) (p planned, refuse func(http.ResponseWriter)) {
	if !c.modelServed(oreq.Model) {
		return p, func(w http.ResponseWriter) { openai.WriteModelNotFound(w, oreq.Model) }
	}
	// A prompt longer than its model takes is refused before it costs
	// tokenizer time; its tokens are checked once the pipeline has them.
	limit := c.cfg.Routing.PromptLimits.For(oreq.Model)
	if err := limit.CheckText(oreq); err != nil {
		return p, func(w http.ResponseWriter) { c.refusePrompt(w, err) }
	}
	if oreq.Prompt.IsTokens() {
		if err := limit.CheckTokens(false, len(oreq.Prompt.Tokens)); err != nil {
			return p, func(w http.ResponseWriter) { c.refusePrompt(w, err) }
		}
	}
	// The tenant's cache salt joins the request's identity here and goes
	// to the pod in the body.
	body, err := edge.Salt(ctx, body, oreq)
	if err != nil {
		return p, func(w http.ResponseWriter) { edge.WriteHTTP(w, err) }
	}
	preq, err := pipelineRequest(header, body, oreq)
	if err != nil {
		return p, func(w http.ResponseWriter) { openai.WriteRequestError(w, err) }
	}
	d, err := c.router.decideIn(ctx, preq, allow)
	if err != nil {
		c.rm.decisions.WithLabelValues(c.cfg.Routing.Profile, "error").Inc()
		span := trace.SpanFromContext(ctx)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		status, ebody := decideFailure(err)
		c.logFailure("cell: cannot route request", status, err, "kind", oreq.Kind.String(), "model", preq.Model)
		return p, func(w http.ResponseWriter) { openai.WriteErrorBody(w, status, ebody) }
	}
	if toks, ok := pipeline.Tokens.Get(d.rc); ok {
		if err := limit.CheckTokens(preq.Chat, len(toks)); err != nil {
			c.router.release(d)
			return p, func(w http.ResponseWriter) { c.refusePrompt(w, err) }
		}
	}
	c.rm.decisionTime.Observe(d.took.Seconds())
	return planned{body: body, preq: preq, d: d}, nil
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
// sessions, metrics and spans up to date (through a call, api_call.go).
func (c *Cell) execute(w http.ResponseWriter, r *http.Request, body []byte, preq *pipeline.Request, d *decision, start time.Time, access *logging.Entry) {
	k := c.newCall(r.Context(), preq, d, start, r.Header.Get(c.cfg.Routing.SessionHeader), access)
	// The pod set is read once more as the request leaves: a pod that
	// turned not Ready, or was deleted, since the decision gets nothing new.
	view := c.pods.Load()
	hooks := k.hooks(view.Version)
	var err error
	if d.plan.Disaggregated {
		k.leg = "prefill"
		err = c.proxy.ForwardDisaggregated(w, r, body, k.targets(view, d.plan.Prefill), k.targets(view, d.plan.Decode), hooks)
	} else {
		err = c.proxy.Forward(w, r, body, k.targets(view, d.plan.Single), hooks)
	}
	k.end()
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
