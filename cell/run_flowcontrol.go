package cell

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/podset"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// QueueWaitHeader tells the client how long its request waited in the
// flow-control queue, in seconds, when it waited at all.
const QueueWaitHeader = "X-Cellrouter-Queue-Wait"

// flowConfig is cfg's flow control with what it takes from the rest of
// the configuration: a block's prefill time (routing.cost's
// prefill_per_token_us x events.block_size), what a detour is worth to
// the affinity wait.
func flowConfig(cfg Config) flowcontrol.Config {
	fc := cfg.FlowControl
	fc.PrefillPerBlock = time.Duration(float64(cfg.Events.BlockSize) * cfg.Routing.Cost.PrefillPerTokenUs * float64(time.Microsecond))
	return fc
}

// podSaturation judges a pod saturated for flow control
// (flowcontrol.Saturation) from the load the cell already knows: the
// router's own requests and blocks on it (cell/load), corrected by the
// engine's metrics when they are fresh (cell/enginemetrics), against the
// flow_control thresholds.
type podSaturation struct {
	cfg       flowcontrol.Config
	tracker   *load.Tracker
	pods      *podset.Set
	engines   *engineScraper // nil: engine metrics off
	blockSize int
}

var _ flowcontrol.Saturation = (*podSaturation)(nil)

// Saturated implements flowcontrol.Saturation: the router's requests on
// the pod reach max_inflight_per_pod, or its engine has
// queue_depth_threshold requests waiting, or its active blocks (the
// router's, plus what only the engine saw) reach active_blocks_threshold
// of its capacity (kv_blocks, else the engine's cache size); each limit
// less reserve of it (flowcontrol.ReservedLimit for the counts). Without
// fresh engine metrics and with engine_max_running known, the engine's
// queue and KV use are the router's estimate (engineEstimate).
func (s *podSaturation) Saturated(pod string, reserve float64) bool {
	u := s.tracker.Usage(pod)
	if s.cfg.MaxInflightPerPod > 0 && u.Requests >= flowcontrol.ReservedLimit(s.cfg.MaxInflightPerPod, reserve) {
		return true
	}
	var capacity float64
	if p, ok := s.pods.Load().Get(pod); ok && p.KVBlocks > 0 {
		capacity = float64(p.KVBlocks)
	}
	blocks := float64(u.Blocks)
	fresh := false
	if s.engines != nil {
		snap, ok := s.engines.View().Load(pod)
		if fresh = ok; fresh {
			if s.cfg.QueueDepthThreshold > 0 && snap.HasQueue && snap.Waiting >= float64(flowcontrol.ReservedLimit(s.cfg.QueueDepthThreshold, reserve)) {
				return true
			}
			if capacity == 0 && s.blockSize > 0 {
				capacity = float64(snap.CapacityTokens / int64(s.blockSize))
			}
			if eng, ok := snap.LoadBlocks(capacity); ok {
				blocks += max(0, eng-float64(snap.RouterBlocks))
			}
		}
	}
	if !fresh && s.cfg.EngineMaxRunning > 0 {
		waiting, held := engineEstimate(u, s.cfg.EngineMaxRunning)
		if s.cfg.QueueDepthThreshold > 0 && waiting >= flowcontrol.ReservedLimit(s.cfg.QueueDepthThreshold, reserve) {
			return true
		}
		blocks = held
	}
	return s.cfg.ActiveBlocksThreshold > 0 && capacity > 0 && blocks >= s.cfg.ActiveBlocksThreshold*(1-reserve)*capacity
}

// engineEstimate is what the router's own requests on a pod (u) say of
// an engine that runs at most maxRunning at once: how many wait in its
// queue, and the KV blocks the running ones hold (requests waiting in an
// engine's queue hold none), each request counted at the mean of u's
// blocks, since the router does not know which ones run.
func engineEstimate(u load.Usage, maxRunning int) (waiting int, held float64) {
	held = float64(u.Blocks)
	if u.Requests > maxRunning {
		waiting = u.Requests - maxRunning
		held *= float64(maxRunning) / float64(u.Requests)
	}
	return waiting, held
}

// flowPods returns the pods a decision would send the request to, best
// first (each once: the request waits while all of them are saturated)
// and, with withDetours, each one's detour: the prefix blocks sending the
// request there would prefill again that its pick holds. Flow control
// offers a freed pod first to the waiting request it costs the least
// (flowcontrol.Request.Detours). The detours are nil when the pick
// matched nothing.
func flowPods(d *decision, withDetours bool) (pods []string, detours []float64) {
	dec := d.plan.Single
	if d.plan.Disaggregated {
		dec = d.plan.Decode
	}
	var match *index.MatchResult
	if withDetours {
		match, _ = pipeline.Match.Get(d.rc)
	}
	pods = make([]string, 0, len(dec.Order))
	if match != nil {
		// Each pod's depth first, turned into its detour at the end.
		detours = make([]float64, 0, len(dec.Order))
	}
	var seen map[string]int // for long lists; a short one is scanned
	for _, ci := range dec.Order {
		c := &d.rc.Candidates[ci]
		depth := 0.0
		if match != nil && c.HasSlot {
			depth = float64(match.Depth(c.Slot))
		}
		at := -1
		if seen != nil {
			if i, ok := seen[c.Pod]; ok {
				at = i
			}
		} else {
			at = slices.Index(pods, c.Pod)
		}
		if at >= 0 { // another holder of the pod (pod#rank)
			if detours != nil {
				detours[at] = max(detours[at], depth)
			}
			continue
		}
		pods = append(pods, c.Pod)
		if detours != nil {
			detours = append(detours, depth)
		}
		if seen != nil {
			seen[c.Pod] = len(pods) - 1
		} else if len(pods) == 16 {
			seen = make(map[string]int, len(dec.Order))
			for i, p := range pods {
				seen[p] = i
			}
		}
	}
	if len(detours) == 0 || detours[0] == 0 {
		return pods, nil
	}
	pick := detours[0]
	for i, n := range detours {
		detours[i] = max(0, pick-n)
	}
	return pods, detours
}

// admitFlow passes a decided request through flow control. It returns the
// decision to execute (a new one when the request waited: it is re-picked,
// since the cache and the load moved meanwhile) and the grant to end, or
// ok false when it answered the client itself (429 past the deadline or
// from a full queue, 503 when the cell stops) or the client left. d is
// released when it is replaced or refused. explain records the re-pick's
// stages for the decision ring, as the first pick's were.
func (c *Cell) admitFlow(ctx context.Context, w http.ResponseWriter, r *http.Request, preq *pipeline.Request, d *decision, band auth.Priority, explain bool) (*decision, *flowcontrol.Grant, bool) {
	return c.admitFlowOf(ctx, w, r, preq, d, band, nil, explain)
}

// admitFlowIn is admitFlow for a gateway's request (picker mode): the
// re-pick stays within the gateway's subset (allow; nil is every pod).
func (c *Cell) admitFlowIn(ctx context.Context, w http.ResponseWriter, r *http.Request, preq *pipeline.Request, d *decision, band auth.Priority, allow func(string) bool) (*decision, *flowcontrol.Grant, bool) {
	return c.admitFlowOf(ctx, w, r, preq, d, band, allow, false)
}

func (c *Cell) admitFlowOf(ctx context.Context, w http.ResponseWriter, r *http.Request, preq *pipeline.Request, d *decision, band auth.Priority, allow func(string) bool, explain bool) (*decision, *flowcontrol.Grant, bool) {
	p, _ := edge.PrincipalFrom(r.Context())
	timeout, _ := flowcontrol.ParseTimeout(r.Header.Get(flowcontrol.TimeoutHeader)) // checked by the caller
	tokens := preq.MaxTokens
	if tokens <= 0 {
		tokens = c.cfg.FlowControl.OutputTokensEstimate
	}
	if toks, ok := pipeline.Tokens.Get(d.rc); ok {
		tokens += len(toks)
	} else if hashes, ok := pipeline.BlockHashes.Get(d.rc); ok {
		tokens += len(hashes) * c.cfg.Events.BlockSize
	}
	req := flowcontrol.Request{Tenant: p.TenantName(), Band: band, Weight: p.Tenant.FairWeight(), ClientTimeout: timeout,
		Tokens: tokens}
	req.Pods, req.Detours = flowPods(d, true)
	if p.Tenant != nil {
		req.MaxWait = p.Tenant.MaxQueueWait
	}
	// The queued request this one's prompt extends, if any, leads it
	// (looked for only while requests wait); and this one may lead the
	// requests that extend its own while it waits (indexed only once it
	// joins the queue: most requests never do).
	hashes, _ := pipeline.BlockHashes.Get(d.rc)
	if len(hashes) > 0 && c.cfg.FlowControl.Enabled {
		if c.flow.Waiting() > 0 {
			held := heldDepth(d)
			if lead, depth := c.follow.leader(hashes, held); lead != 0 {
				req.Follows, req.FollowBlocks = lead, float64(depth-held)
			}
		}
		// The closure takes the key, not req, which would move req to
		// the heap for every request.
		key := c.follow.newKey()
		req.Key = key
		indexed := false
		req.Queued = func() { c.follow.add(key, hashes); indexed = true }
		defer func() {
			if indexed {
				c.follow.remove(key)
			}
		}()
	}
	g, err := c.flow.Admit(ctx, req)
	if err != nil {
		c.router.release(d)
		c.refuseFlow(w, err)
		return nil, nil, false
	}
	if !g.Queued() {
		placeFlow(d, g)
		return d, g, true
	}
	w.Header().Set(QueueWaitHeader, strconv.FormatFloat(g.Waited().Seconds(), 'f', 3, 64))
	c.router.release(d)
	d, err = c.router.decideIn(ctx, preq, allow, explain)
	if err != nil {
		g.Done(0)
		c.rm.decisions.WithLabelValues(c.cfg.Routing.Profile, "error").Inc()
		status, body := decideFailure(err)
		c.logFailure("cell: cannot re-pick a request that waited", status, err, "path", r.URL.Path, "model", preq.Model)
		openai.WriteErrorBody(w, status, body)
		return nil, nil, false
	}
	placeFlow(d, g)
	return d, g, true
}

// placeFlow moves the pod flow control admitted the request to to the
// front of its decision, when that is not its pick: a saturated pick
// gives way to the best pod with room (beyond the headroom, for a request
// that had to leave it to others: flow_control.headroom) that is open to
// it after its wait (flow_control.affinity_wait). A follower goes to its
// leader's pod while that has room (Grant.LeaderPod), even when the
// re-pick's load filters left it out: the re-pick does not know that the
// follower's prefix is being computed there, and flow control's judgement
// of the pod's room stands. The rest of the order, the fallbacks, stays
// as the pipeline ranked it.
func placeFlow(d *decision, g *flowcontrol.Grant) {
	if p := g.LeaderPod(); p != "" && !d.plan.Disaggregated && toFront(d, p, true) {
		return
	}
	// Only a request that waited is placed by its detours; one admitted
	// at once goes where its admission found room.
	pods, detours := flowPods(d, g.Queued())
	if i := g.Place(pods, detours); i > 0 {
		toFront(d, pods[i], false)
	}
}

// toFront moves pod to the front of d's order and reports whether it
// could: a pod outside the order is brought in, with withLoadFiltered,
// when only load filters (loadFilters) left it out.
func toFront(d *decision, pod string, withLoadFiltered bool) bool {
	dec := &d.plan.Single
	if d.plan.Disaggregated {
		dec = &d.plan.Decode
	}
	for k, ci := range dec.Order {
		if d.rc.Candidates[ci].Pod != pod {
			continue
		}
		copy(dec.Order[1:k+1], dec.Order[:k])
		dec.Order[0] = ci
		if k < len(dec.Scores) {
			sc := dec.Scores[k]
			copy(dec.Scores[1:k+1], dec.Scores[:k])
			dec.Scores[0] = sc
		}
		return true
	}
	if !withLoadFiltered || len(dec.Order) == 0 {
		return false
	}
	ci := -1
	for i := range d.rc.Candidates {
		if d.rc.Candidates[i].Pod == pod {
			ci = i
			break
		}
	}
	if ci < 0 {
		return false
	}
	for _, r := range d.rc.Rejected() {
		if r.Candidate == ci && !loadFilters[r.Filter] {
			return false // unhealthy, draining, the wrong role: never
		}
	}
	dec.Order = slices.Insert(dec.Order, 0, ci)
	if len(dec.Scores) > 0 {
		dec.Scores = slices.Insert(dec.Scores, 0, dec.Scores[0])
	}
	return true
}

// refuseFlow answers a request flow control refused: 429 with Retry-After
// past its deadline or shed from a full queue, 503 when the cell stops,
// nothing when the client left.
func (c *Cell) refuseFlow(w http.ResponseWriter, err error) {
	var fe *flowcontrol.Error
	switch {
	case errors.As(err, &fe):
		w.Header().Set("Retry-After", strconv.FormatInt(int64((fe.RetryAfter+time.Second-1)/time.Second), 10))
		code, msg := "queue_timeout", "the cell's pods are saturated and the request waited its whole deadline in the queue; retry after the time in Retry-After"
		if errors.Is(err, flowcontrol.ErrShed) {
			code, msg = "queue_full", "the cell's pods are saturated and its queue is full of requests of your priority or higher; retry after the time in Retry-After"
		}
		openai.WriteErrorBody(w, http.StatusTooManyRequests, openai.NewErrorBody(edge.TypeRequests, msg, "", code))
	case errors.Is(err, flowcontrol.ErrClosed):
		w.Header().Set("Retry-After", "1")
		openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
			"the cell is stopping; retry after the time in Retry-After", "", "server_shutting_down"))
	}
	// A client that left gets nothing: nobody reads the answer.
}

// requestBand returns the priority band of r (auth.PriorityHeader against
// its principal's tenant) after checking flowcontrol.TimeoutHeader; a
// header that names no band, or no positive duration, is answered 400
// and ok is false.
func requestBand(w http.ResponseWriter, r *http.Request) (band auth.Priority, ok bool) {
	if _, err := flowcontrol.ParseTimeout(r.Header.Get(flowcontrol.TimeoutHeader)); err != nil {
		openai.WriteErrorBody(w, http.StatusBadRequest, openai.NewErrorBody(openai.TypeInvalidRequest, err.Error(), flowcontrol.TimeoutHeader, "invalid_timeout"))
		return 0, false
	}
	p, _ := edge.PrincipalFrom(r.Context())
	band, err := p.RequestPriority(r.Header.Get(auth.PriorityHeader))
	if err != nil {
		edge.WriteHTTP(w, err)
		return 0, false
	}
	return band, true
}
