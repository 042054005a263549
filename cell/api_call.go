package cell

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/podset"
	"github.com/cellrouter/cellrouter/internal/logging"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// call is the bookkeeping of one routed request, whoever carries it: proxy
// mode's Forward (through hooks) or a gateway that asked the cell to pick
// (api_epp.go, through the same methods). It keeps the load tracker
// (active blocks: added at the attempt, prefill done at the first byte,
// freed at the end), the learner (speculative entries from the attempt,
// approximate ones from a successful first byte), sessions, metrics and
// the upstream span. Its methods are called from one goroutine at a time.
type call struct {
	c         *Cell
	ctx       context.Context
	d         *decision
	rc        *pipeline.Context
	preq      *pipeline.Request
	hashes    []index.BlockHash
	match     *index.MatchResult
	blocks    int // the prompt's blocks
	outBlocks int // the output budget's blocks
	start     time.Time
	session   string

	ticket   *load.Ticket
	stored   int           // the attempt's pod's stored depth (exact or approximate)
	prefill  *load.Prefill // the attempt's prefill in progress; nil when none
	upstream trace.Span
	answered bool   // the relayed answer is a success (2xx)
	leg      string // "single", "prefill" or "decode"

	rec *DecisionRecord // the decision ring's record; nil when not recorded
}

// newCall starts the bookkeeping of d and counts the decision: routed, its
// match source, a fail-open.
func (c *Cell) newCall(ctx context.Context, preq *pipeline.Request, d *decision, start time.Time, session string, access *logging.Entry, rec *DecisionRecord) *call {
	k := &call{c: c, ctx: ctx, d: d, rc: d.rc, preq: preq, start: start, session: session, leg: "single", rec: rec}
	k.hashes, _ = pipeline.BlockHashes.Get(k.rc)
	k.match, _ = pipeline.Match.Get(k.rc)
	k.blocks = len(k.hashes)
	if preq.MaxTokens > 0 {
		k.outBlocks = (preq.MaxTokens + c.cfg.Events.BlockSize - 1) / c.cfg.Events.BlockSize
	}
	main := k.main()
	c.rm.decisions.WithLabelValues(main.Profile, "routed").Inc()
	source := c.matchSource(k.rc, main, k.match, k.hashes)
	c.rm.matchSource.WithLabelValues(source).Inc()
	access.SetDecision(source, d.took, k.blocks)
	if rec != nil {
		rec.Path, rec.Decision, rec.Blocks = source, d.took, k.blocks
	}
	if main.FailedOpen || d.plan.Prefill.FailedOpen {
		c.rm.failOpen.Inc()
	}
	return k
}

// main is the decision whose pod serves the client.
func (k *call) main() pipeline.Decision {
	if k.d.plan.Disaggregated {
		return k.d.plan.Decode
	}
	return k.d.plan.Single
}

// targets are dec's pods still routable in view, best first, the first
// with the cache hint.
func (k *call) targets(view *podset.Snapshot, dec pipeline.Decision) []proxy.Target {
	out := make([]proxy.Target, 0, len(dec.Order))
	for _, ci := range dec.Order {
		cand := &k.rc.Candidates[ci]
		if !view.Routable(cand.Pod) {
			continue
		}
		t := proxy.Target{Pod: cand.Pod, Address: cand.Address}
		if len(out) == 0 {
			t.Header = k.c.cacheHint(cand, k.match, k.hashes)
		}
		out = append(out, t)
	}
	return out
}

// depthOf is pod's matched depth.
func (k *call) depthOf(pod string) int {
	for _, cand := range k.rc.Candidates {
		if cand.Pod == pod && cand.HasSlot && k.match != nil {
			return k.match.Depth(cand.Slot)
		}
	}
	return 0
}

// storedDepthOf is the part of pod's match that counts as cached in the
// load tracker's pending prefill and where the call's own prefill begins
// (the prefix wait's Prefill.From): what the pod has stored (exact blocks,
// or approximate ones for a pod without events, which the cell learns at
// first token, when they are stored), not speculative blocks, which the
// request that will store them may still be prefilling (a request that
// starts before then computes them again). So a pod a burst of one new
// prefix piled onto shows the queue it has and the cost's queue wait
// spreads the rest, and a prefill that began on top of another one in
// progress is known to store both.
func (k *call) storedDepthOf(pod string) int {
	s, ok := slotOf(k.rc, pod)
	if !ok || k.match == nil {
		return 0
	}
	return k.c.ix.StoredDepth(k.hashes, k.match, s)
}

// What the cell learns from its own routing (see run_learned.go): the
// chosen pod's blocks are speculative from the attempt until its events
// confirm them, and a pod without events holds them, approximately, from
// its first token on.
func (k *call) speculate(pod string) {
	if s, ok := slotOf(k.rc, pod); ok {
		k.c.learner.Speculate(s, k.hashes, time.Now())
		k.c.touchMatched(s, k.hashes, k.match)
	}
}

func (k *call) touch(pod string) {
	if s, ok := slotOf(k.rc, pod); ok {
		k.c.learner.Touch(s, k.hashes, time.Now())
	}
}

// attempt records that pod gets the request (a first attempt or a retry):
// the previous attempt's load is freed, pod's added, its blocks become
// speculative.
func (k *call) attempt(pod string) {
	k.attemptOn(pod)
	k.d.grant.StartedOn(pod) // flow control's next request sees this one's load
	k.beginPrefill(pod)
}

// attemptHeld is the first attempt of proxy mode (every attempt) and of
// picker mode (the pick, whose answer the gateway waits for): as attempt,
// and the request waits for a prefill of its own prefix that pod has in
// progress (the prefix wait) before it goes. A fallback the gateway
// already served is recorded by attempt.
func (k *call) attemptHeld(pod string) {
	k.attemptOn(pod)
	k.d.grant.StartedOn(pod)
	f, bound := k.prefixToWait(pod)
	// The call's own prefill is recorded before it waits, so that the
	// next turn of its conversation, arriving meanwhile, waits for it
	// (which ends after the prefill it waits for) rather than for the
	// same one, and does not start beside it.
	k.beginPrefill(pod)
	k.waitPrefix(f, bound)
}

// attemptOn moves the call's load onto pod: the previous attempt's ticket
// and prefill end, pod's ticket starts, the blocks become speculative.
func (k *call) attemptOn(pod string) {
	if k.ticket != nil {
		k.c.router.tracker.Done(k.ticket)
	}
	k.c.router.prefills.End(k.prefill)
	k.prefill = nil
	k.stored = k.storedDepthOf(pod)
	prefill := k.blocks - k.stored
	if k.d.plan.Disaggregated && k.leg == "decode" {
		prefill = 0 // the KV cache arrives from the prefill pod
	}
	k.ticket = k.c.router.tracker.Start(pod, k.blocks+k.outBlocks, prefill, k.preq.RouteTemplate)
	k.speculate(pod)
}

// beginPrefill records that pod prefills the prompt's blocks beyond what
// it holds, until the first token: a request of the same prefix sent there
// meanwhile waits for them (holdForPrefix).
func (k *call) beginPrefill(pod string) {
	if k.stored < k.blocks && !(k.d.plan.Disaggregated && k.leg == "decode") {
		k.prefill = k.c.router.prefills.Begin(pod, k.hashes, k.stored, time.Now())
	}
}

// retry records that an attempt failed before any byte reached the client.
func (k *call) retry(err error) {
	k.c.rm.retries.Inc()
	if k.upstream != nil {
		k.upstream.RecordError(err)
		k.upstream.End()
		k.upstream = nil
	}
}

// prefillDone records the end of the prefill leg of a disaggregated call.
func (k *call) prefillDone(pod string, res proxy.Result) {
	k.c.rm.upstream.WithLabelValues("prefill", proxy.StatusClass(res.Status)).Inc()
	k.c.observeUsage(res.Usage, k.depthOf(pod), k.blocks)
	if res.Err == nil && res.Status/100 == 2 {
		k.touch(pod) // the prefill pod computed the prompt's blocks
	}
	k.end()
	k.leg = "decode"
}

// status records the status of the answer about to reach the client.
func (k *call) status(st int) { k.answered = st/100 == 2 }

// responseHeaders sets the headers that say where the request went.
func (k *call) responseHeaders(pod string, h http.Header) {
	h.Set(PodHeader, pod)
	h.Set(CellIDHeader, k.c.cfg.CellID)
	h.Set(proxy.MatchedBlocksHeader, strconv.Itoa(k.depthOf(pod)))
}

// firstByte records the first response byte (the time to first token).
func (k *call) firstByte(pod string) {
	k.c.rm.ttft.Observe(time.Since(k.start).Seconds())
	if k.ticket != nil {
		k.c.router.tracker.FirstToken(k.ticket)
	}
	k.c.router.prefills.End(k.prefill) // the pod stored the prompt's blocks
	k.prefill = nil
	k.c.router.sessions.Record(k.session, pod)
	if k.answered {
		k.touch(pod) // an error answer computed nothing
	}
}

// done records the end of the call, with the pod whose attempt ended it.
func (k *call) done(pod string, res proxy.Result) {
	if k.rec != nil {
		k.rec.Pod, k.rec.Status, k.rec.MatchedBlocks = pod, res.Status, k.depthOf(pod)
	}
	if res.Usage != nil {
		k.d.served = res.Usage.PromptTokens + res.Usage.CompletionTokens
	}
	k.c.rm.upstream.WithLabelValues(k.leg, proxy.StatusClass(res.Status)).Inc()
	if !k.d.plan.Disaggregated {
		k.c.observeUsage(res.Usage, k.depthOf(pod), k.blocks)
	}
	if k.upstream != nil {
		k.upstream.SetAttributes(attribute.Int("http.response.status_code", res.Status))
		if res.Err != nil {
			k.upstream.RecordError(res.Err)
		}
	}
	k.end()
}

// end frees what the call's attempt holds: its load ticket and its
// upstream span (done and prefillDone end an attempt through it; a call
// that ended without done calls it last).
func (k *call) end() {
	if k.ticket != nil {
		k.c.router.tracker.Done(k.ticket)
		k.ticket = nil
	}
	k.c.router.prefills.End(k.prefill)
	k.prefill = nil
	if k.upstream != nil {
		k.upstream.End()
		k.upstream = nil
	}
}

// startUpstream opens the span of one upstream attempt (when tracing
// records) and returns the context to propagate.
func (k *call) startUpstream(pod string) context.Context {
	ctx := k.ctx
	if k.c.tr.Enabled() { // the attributes cost allocations; only for a recording span
		ctx, k.upstream = k.c.tr.Get().Start(ctx, "cell.upstream", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(telemetry.CellKey.String(k.c.cfg.CellID), attribute.String("cellrouter.pod", pod), attribute.String("cellrouter.leg", k.leg),
				attribute.Int("cellrouter.matched_blocks", k.depthOf(pod)), attribute.Int("cellrouter.blocks", k.blocks)))
	}
	return ctx
}

// hooks are proxy mode's hooks: Forward drives the call through them.
func (k *call) hooks(podSetVersion uint64) proxy.Hooks {
	return proxy.Hooks{
		// attemptHeld may block, up to the prefix wait's bound, before the
		// attempt is sent; the proxy starts its timers after the hook.
		OnAttempt: func(t proxy.Target, attempt int) { k.attemptHeld(t.Pod) },
		OnRequest: func(t proxy.Target, out *http.Request) {
			telemetry.Propagator.Inject(k.startUpstream(t.Pod), propagation.HeaderCarrier(out.Header))
			out.Header.Set(PodSetVersionHeader, strconv.FormatUint(podSetVersion, 10))
		},
		OnRetry:       func(t proxy.Target, attempt int, err error) { k.retry(err) },
		OnPrefillDone: func(t proxy.Target, res proxy.Result) { k.prefillDone(t.Pod, res) },
		OnStatus:      func(t proxy.Target, status int) { k.status(status) },
		OnResponse:    func(t proxy.Target, h http.Header) { k.responseHeaders(t.Pod, h) },
		OnFirstByte:   func(t proxy.Target) { k.firstByte(t.Pod) },
		OnDone:        func(t proxy.Target, res proxy.Result) { k.done(t.Pod, res) },
	}
}
