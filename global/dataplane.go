package global

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// CellHeader tells the client which cell served its request.
const CellHeader = "X-Cellrouter-Cell"

// cellPodHeader is the header in which a cell names the pod that served
// (cell.PodHeader, which this package may not import).
const cellPodHeader = "X-Cellrouter-Pod"

// serverSpan are the global.request span's options, built once.
var serverSpan = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}

// serveInference is the global data plane: parse, decide, hand off.
func (g *Global) serveInference(kind openai.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx := telemetry.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := g.tr.Start(ctx, "global.request", serverSpan...)
		defer span.End()
		w, access := g.access.Begin(ctx, w, r)
		defer access.End()
		body, err := openai.ReadBody(w, r, g.cfg.Limits.MaxBodyBytes)
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
		if g.refuseUnservedModel(w, oreq.Model) {
			return
		}
		// A prompt longer than its model takes is refused before it costs
		// tokenizer time; its tokens are checked once it has them.
		if err := g.cfg.Prompts.For(oreq.Model).CheckText(oreq); err != nil {
			g.refusePrompt(w, err)
			return
		}
		// The tenant's cache salt joins the request's identity here, where
		// it is hashed, and goes to the cell and the engine in the body;
		// its name goes to the cell in TenantHeader (and the gRPC data
		// plane's requests, which no HTTP guard saw, get it too).
		if body, err = edge.Salt(r.Context(), body, oreq); err != nil {
			edge.WriteHTTP(w, err)
			return
		}
		r.Header.Del(edge.TenantHeader)
		if p, _ := edge.PrincipalFrom(r.Context()); p.Tenant != nil {
			r.Header.Set(edge.TenantHeader, p.Tenant.Name)
		}
		band, ok := g.requestBand(w, r)
		if !ok {
			return
		}
		if g.shed(w, band, time.Now()) {
			return
		}
		req := requestOf(kind, oreq)
		req.Band = gossip.BandOf(band)
		rec := g.beginRecord(ctx, r, start, oreq.Model)
		var notes *explainNotes
		if rec != nil {
			notes = &explainNotes{}
		}
		d, err := g.rt.decideToSend(ctx, req, notes)
		path := "cold_" + req.Kind().String()
		if d != nil {
			path = routePath(d)
			g.m.observeTokenize(d)
			access.SetDecision(path, d.Took, d.Blocks)
		} else {
			access.SetDecision(path, 0, 0)
		}
		if rec != nil {
			rec.Path = path
			if d != nil {
				rec.Decision, rec.Blocks = d.Took, d.Blocks
				rec.Explanation = g.rt.explain(d, notes, g.decisions.TopK())
			}
			defer g.endRecord(rec, start)
		}
		if errors.Is(err, openai.ErrPromptTooLong) {
			if rec != nil {
				rec.Status = http.StatusBadRequest
			}
			g.refusePrompt(w, err)
			return
		}
		if err != nil {
			if rec != nil {
				rec.Status = http.StatusServiceUnavailable
			}
			g.m.requests.WithLabelValues(path, "no_cell").Inc()
			span.SetStatus(codes.Error, err.Error())
			g.logFailure("global: cannot route request", http.StatusServiceUnavailable, err, "path", r.URL.Path, "model", oreq.Model)
			openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
				"no cell is available to serve the request", "", "no_cell_available"))
			return
		}
		g.m.decisionTime.Observe(d.Took.Seconds())
		g.m.probes.Observe(float64(len(d.Answers)))
		if d.Unprobed {
			g.m.unprobed.Inc()
		}
		g.m.candidates.Observe(float64(len(d.Candidates)))
		for _, a := range d.Answers {
			if a.Err != nil {
				g.m.probeErrors.Inc()
			}
			g.stats.probed(d.Views[a.Cell].ID, a.RTT, a.Err)
		}
		if span.IsRecording() {
			span.SetAttributes(attribute.String("cellrouter.path", path), attribute.Int("cellrouter.probes", len(d.Answers)),
				attribute.Int("cellrouter.blocks", d.Blocks))
		}
		g.rt.noteRouted(d)
		g.handoff(w, r.WithContext(ctx), body, d, path, oreq.Model, rec)
	}
}

// refusePrompt answers a prompt over its model's limit (a
// *openai.PromptTooLongError): 400 context_length_exceeded, counted in
// cellrouter_limit_hits_total{limit="prompt_bytes"|"prompt_tokens"}.
func (g *Global) refusePrompt(w http.ResponseWriter, err error) {
	var pe *openai.PromptTooLongError
	if !errors.As(err, &pe) {
		openai.WriteRequestError(w, err)
		return
	}
	if pe.Tokens {
		g.sec.m.Hit(edge.LimitPromptTokens)
	} else {
		g.sec.m.Hit(edge.LimitPromptBytes)
	}
	pe.Write(w)
}

// requestOf is the global router's view of a parsed OpenAI request: every
// chat message (role and text, as the cell's tokenizer sees them), or the
// prompt's token ids or text.
func requestOf(kind openai.Kind, oreq *openai.Request) *Request {
	req := &Request{Model: oreq.Model, CacheSalt: oreq.CacheSalt}
	switch {
	case kind == openai.KindChat:
		req.Chat = true
		req.Messages = make([]tokenizer.Message, len(oreq.Messages))
		for i, m := range oreq.Messages {
			req.Messages[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
		}
	case oreq.Prompt.IsTokens():
		req.TokenIDs = oreq.Prompt.Tokens
	default:
		req.Prompt = oreq.Prompt.Text
	}
	return req
}

// routePath is the path label of a decision: how it was routed
// ("summary": probed by summary; "cold": no summary knew the prefix;
// "untokenized": a text prompt or chat the global tier could not
// tokenize, hence cold), then the prompt kind ("tokens", "text", "chat"),
// such as "summary_chat".
func routePath(d *Decision) string {
	how := "summary"
	switch {
	case d.Untokenized:
		how = "untokenized"
	case d.Cold:
		how = "cold"
	}
	return how + "_" + d.Prompt.String()
}

// handoff sends the request (for model) to the chosen cell, whose picker makes the
// final choice, and to the next cells while no byte reached the client.
// rec, when not nil, is the request's decision record: handoff fills in
// the cell, the pod and matched blocks its probe predicted, and the status.
func (g *Global) handoff(w http.ResponseWriter, r *http.Request, body []byte, d *Decision, path, model string, rec *DecisionRecord) {
	predicted := map[string]int{}
	for _, a := range d.Answers {
		if a.Err == nil {
			predicted[d.Views[a.Cell].ID] = a.Matched
		}
	}
	targets := handoffTargets(d, g.turn.Add(1))
	var span trace.Span
	start := time.Now()
	hooks := proxy.Hooks{
		OnRequest: func(t proxy.Target, out *http.Request) {
			var ctx = r.Context()
			if g.tr.Enabled() { // the attributes cost allocations; only for a recording span
				ctx, span = g.tr.Get().Start(ctx, "global.handoff", trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(attribute.String("cellrouter.cell", t.Pod)))
			}
			telemetry.Propagator.Inject(ctx, propagation.HeaderCarrier(out.Header))
		},
		OnRetry: func(t proxy.Target, attempt int, err error) {
			g.m.retries.Inc()
			if span != nil {
				span.RecordError(err)
				span.End()
				span = nil
			}
		},
		OnResponse: func(t proxy.Target, h http.Header) {
			if d.Unprobed { // the cell's own answer stands in for the probe's
				if n, err := strconv.Atoi(h.Get(proxy.MatchedBlocksHeader)); err == nil {
					predicted[t.Pod] = n
				}
			}
			h.Set(CellHeader, t.Pod)
			if rec != nil {
				rec.Pod = h.Get(cellPodHeader) // the pod that served, as its cell says
			}
		},
		OnDone: func(t proxy.Target, res proxy.Result) {
			if rec != nil {
				rec.Cell, rec.Status, rec.MatchedBlocks = t.Pod, res.Status, predicted[t.Pod]
				if rec.Pod == "" {
					rec.Pod = probedPod(d, t.Pod)
				}
			}
			g.m.handoffs.WithLabelValues(proxy.StatusClass(res.Status)).Inc()
			if res.Usage != nil {
				g.m.promptTok.Add(float64(res.Usage.PromptTokens))
				g.m.realisedTok.Add(float64(res.Usage.CachedTokens))
				g.m.predictedTok.Add(float64(predicted[t.Pod] * g.cfg.BlockSize))
				g.stats.served(t.Pod, model, true, res.Usage.PromptTokens, predicted[t.Pod]*g.cfg.BlockSize, res.Usage.CachedTokens)
			} else if res.Status > 0 && res.Status < 500 {
				g.stats.served(t.Pod, model, false, 0, 0, 0)
			}
			if span != nil {
				span.SetAttributes(attribute.Int("http.response.status_code", res.Status),
					attribute.Float64("cellrouter.elapsed_ms", float64(time.Since(start))/1e6))
				span.End()
				span = nil
			}
		},
	}
	err := g.proxy.Forward(w, r, body, targets, hooks)
	outcome := "ok"
	if err != nil {
		outcome = "error"
		g.logFailure("global: hand-off failed", proxy.StatusOf(err), err, "path", r.URL.Path)
		if rec != nil {
			rec.Status = proxy.StatusOf(err)
		}
	}
	g.m.requests.WithLabelValues(path, outcome).Inc()
	if errors.Is(err, proxy.ErrMidStream) {
		panic(http.ErrAbortHandler)
	}
}

// probedPod is the pod cell's probe answer named ("" when it was not
// probed or the probe failed).
func probedPod(d *Decision, cell string) string {
	for _, a := range d.Answers {
		if a.Err == nil && d.Views[a.Cell].ID == cell {
			return a.Pod
		}
	}
	return ""
}

// ReplicaAttempts is how many replicas of one cell a hand-off tries before
// it moves on to the next cell (while no byte reached the client).
const ReplicaAttempts = 2

// handoffTargets lists where a decision's request may go, in order: for
// each cell of d.Order, up to ReplicaAttempts of its live replicas, taken
// in turn (round robin by turn), so that a replica that died before gossip
// noticed costs one refused connection and the request goes to its sibling,
// keeping the cell's cache affinity, before another cell is tried.
func handoffTargets(d *Decision, turn uint64) []proxy.Target {
	targets := make([]proxy.Target, 0, len(d.Order)*ReplicaAttempts)
	for _, i := range d.Order {
		v := &d.Views[i]
		eps := v.rotated(turn)
		for _, ep := range eps[:min(len(eps), ReplicaAttempts)] {
			targets = append(targets, proxy.Target{Pod: v.ID, Address: ep.HTTPAddr, Header: http.Header{CellHeader: {v.ID}}})
		}
	}
	return targets
}

// modelTargets are the cells that may answer for the fleet's models: the
// usable ones, one replica each (in turn) and its sibling.
func (g *Global) modelTargets() []proxy.Target {
	var targets []proxy.Target
	turn := g.turn.Add(1)
	for _, v := range g.rt.views() {
		if v.usable() {
			eps := v.rotated(turn)
			for _, ep := range eps[:min(len(eps), ReplicaAttempts)] {
				targets = append(targets, proxy.Target{Pod: v.ID, Address: ep.HTTPAddr})
			}
		}
	}
	return targets
}

// serveModels relays GET /v1/models from a usable cell.
func (g *Global) serveModels(w http.ResponseWriter, r *http.Request) {
	targets := g.modelTargets()
	if len(targets) == 0 {
		openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
			"no cell is available to list the models", "", "no_cell_available"))
		return
	}
	if err := g.proxy.Forward(w, r, nil, targets, proxy.Hooks{}); err != nil {
		g.logFailure("global: listing models failed", proxy.StatusOf(err), err)
	}
}

// serveModel answers GET /v1/models/{id} from a usable cell's model list.
func (g *Global) serveModel(w http.ResponseWriter, r *http.Request) {
	targets := g.modelTargets()
	if len(targets) == 0 {
		openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
			"no cell is available to list the models", "", "no_cell_available"))
		return
	}
	if err := g.proxy.ServeModel(w, r, r.PathValue("id"), targets); err != nil {
		g.logFailure("global: retrieving a model failed", proxy.StatusOf(err), err, "model", r.PathValue("id"))
	}
}

// logFailure logs an error the client got a clean message for, with the
// details (cells, addresses) the message leaves out, at the level of
// proxy.FailureLevel.
func (g *Global) logFailure(msg string, status int, err error, args ...any) {
	g.log.Log(context.Background(), proxy.FailureLevel(status, err), msg, append(args, "status", status, "err", err)...)
}
