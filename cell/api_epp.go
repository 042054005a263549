package cell

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/epp"
	"github.com/cellrouter/cellrouter/internal/proxy"
	"github.com/cellrouter/cellrouter/internal/telemetry"
)

// errServedElsewhere is what a pick's call records when the gateway
// reports a fallback served the request: the attempts before it failed
// before any byte reached the client, as a retry in proxy mode.
var errServedElsewhere = errors.New("cell: the gateway served the request from a fallback")

// eppPicker is the cell as a gateway's Endpoint Picker (run_epp.go serves
// it): the same plan as proxy mode (api_inference.go: model, prompt
// limits, tenant salt, Prepare/Filter/Score/Pick among the subset the
// gateway allows), answered with the pick and its fallbacks instead of a
// proxied call, and the same call bookkeeping (api_call.go) driven by what
// the gateway reports of the response. The answer is held, as proxy mode
// holds its request, for flow control and for the prefix wait.
type eppPicker struct{ c *Cell }

var _ epp.Picker = eppPicker{}

// Pick decides req; the exchange it returns owns the decision until
// Finish.
func (p eppPicker) Pick(ctx context.Context, req *epp.Request) (*epp.Result, error) {
	c := p.c
	var allow func(string) bool
	if req.HasSubset {
		allow = req.InSubset
	}
	if req.OpenAI == nil {
		return p.pickAny(req, allow)
	}
	start := time.Now()
	ctx = telemetry.Propagator.Extract(ctx, propagation.HeaderCarrier(req.Header))
	ctx, span := c.tr.Start(ctx, "cell.request", c.requestSpan...)
	c.rm.inflight.Inc()
	fail := func(err error) (*epp.Result, error) {
		span.End()
		c.rm.inflight.Dec()
		return nil, err
	}
	// The request as proxy mode's helpers read it: the principal in its
	// context, the client's band and timeout in its headers.
	hr := (&http.Request{Method: req.Method, URL: &url.URL{Path: req.Path}, Header: req.Header}).WithContext(ctx)
	var band auth.Priority
	ok := false
	if e := epp.Answer(func(w http.ResponseWriter) { band, ok = requestBand(w, hr) }); !ok {
		return fail(e)
	}
	pl, refuse := c.plan(ctx, req.Header, req.Body, req.OpenAI, allow, false)
	if refuse != nil {
		return fail(epp.Answer(refuse))
	}
	// Flow control as in proxy mode: the gateway's call waits while the
	// pick's pods are saturated, and the request is re-picked (within the
	// subset) when it leaves the queue; past its deadline the gateway
	// answers the client 429 with Retry-After.
	var d *decision
	var grant *flowcontrol.Grant
	if e := epp.Answer(func(w http.ResponseWriter) {
		d, grant, ok = c.admitFlowIn(ctx, w, hr, pl.preq, pl.d, band, allow)
	}); !ok {
		if len(e.Body) == 0 { // the gateway's stream ended while the request waited
			return fail(context.Cause(ctx))
		}
		return fail(e)
	}
	d.grant = grant
	k := c.newCall(ctx, pl.preq, d, start, req.Header.Get(c.cfg.Routing.SessionHeader), nil, nil)
	view := c.pods.Load()
	// A disaggregated plan's prefill leg needs a second call the gateway
	// does not make: the decode pods are offered, and the chosen one
	// prefills itself (as vLLM's proxies do when the prefill returns no
	// transfer parameters).
	targets := k.targets(view, k.main())
	x := &eppExchange{k: k, span: span, start: start, targets: targets}
	if len(targets) == 0 {
		x.Finish(false)
		return nil, epp.ErrNoEndpoint
	}
	res := &epp.Result{Exchange: x, Header: http.Header{}}
	for _, t := range targets {
		res.Endpoints = append(res.Endpoints, t.Address)
	}
	for name, v := range targets[0].Header { // the cache hint
		res.Header[name] = v
	}
	// The request reaches the pod as proxy mode sends it: the tenant the
	// cell admitted it for, no API key, the pod set version, the trace.
	res.Remove = append(res.Remove, edge.TenantHeader)
	if pr := req.Principal; pr.Tenant != nil {
		res.Header.Set(edge.TenantHeader, pr.Tenant.Name)
	}
	if req.Principal.KeyID != "" {
		res.Remove = append(res.Remove, "Authorization")
	}
	res.Header.Set(PodSetVersionHeader, strconv.FormatUint(view.Version, 10))
	x.pod = targets[0].Pod
	// The prefix wait as in proxy mode (prefix_wait.go): the pick's load
	// and its own prefill are recorded, then the answer is held while the
	// pick is still prefilling more of the prompt's prefix than it holds,
	// so that the gateway sends the request once that prefix is stored.
	// A gateway that goes away meanwhile gets no answer, and the call ends
	// here (the server finishes no exchange it did not get).
	k.attemptHeld(x.pod)
	if ctx.Err() != nil {
		x.Finish(false)
		return nil, context.Cause(ctx)
	}
	telemetry.Propagator.Inject(k.startUpstream(x.pod), propagation.HeaderCarrier(res.Header))
	if !bytes.Equal(pl.body, req.Body) {
		res.Body = pl.body // the tenant's salt went in
	}
	return res, nil
}

// pickAny answers a request the pipeline does not route (GET /v1/models):
// the healthy pods that are not draining, in the subset.
func (p eppPicker) pickAny(req *epp.Request, allow func(string) bool) (*epp.Result, error) {
	res := &epp.Result{}
	for _, t := range p.c.modelTargets() {
		if allow == nil || allow(t.Address) {
			res.Endpoints = append(res.Endpoints, t.Address)
		}
	}
	if len(res.Endpoints) == 0 {
		return nil, epp.ErrNoEndpoint
	}
	if req.Principal.KeyID != "" {
		res.Remove = []string{"Authorization", edge.TenantHeader}
	}
	return res, nil
}

// eppExchange follows a picked request's response for its call, as the
// proxy's hooks do in proxy mode: the served pod (a fallback is a retry),
// the status, the first byte, the usage, the end or the cancellation.
type eppExchange struct {
	k       *call
	span    trace.Span
	start   time.Time
	targets []proxy.Target
	pod     string // the pod of the current attempt

	served    bool
	status    int
	bytes     int64
	firstByte time.Duration
	attempts  int
	usage     proxy.UsageScanner
	finished  bool
}

// podOf is the pod at addr: a target, else any candidate of the decision
// (a gateway that went its own way), else "".
func (x *eppExchange) podOf(addr string) string {
	for _, t := range x.targets {
		if t.Address == addr {
			return t.Pod
		}
	}
	for _, cand := range x.k.rc.Candidates {
		if cand.Address == addr {
			return cand.Pod
		}
	}
	return ""
}

// Served moves the call to the pod that served, when the gateway went to a
// fallback, and records the status.
func (x *eppExchange) Served(endpoint string, status int) http.Header {
	x.served, x.status, x.attempts = true, status, 1
	if pod := x.podOf(endpoint); pod != "" && pod != x.pod {
		x.k.retry(errServedElsewhere)
		x.pod = pod
		x.k.attempt(pod)
		x.attempts = 2
	}
	x.k.status(status)
	h := http.Header{}
	x.k.responseHeaders(x.pod, h)
	return h
}

// Body records the first byte and scans for usage.
func (x *eppExchange) Body(chunk []byte) {
	if x.bytes == 0 {
		x.firstByte = time.Since(x.start)
		x.k.firstByte(x.pod)
	}
	x.bytes += int64(len(chunk))
	x.usage.Write(chunk)
}

// Finish ends the call and gives the decision back.
func (x *eppExchange) Finish(complete bool) {
	if x.finished {
		return
	}
	x.finished = true
	k := x.k
	if x.pod != "" {
		res := proxy.Result{Status: x.status, Bytes: x.bytes, Duration: time.Since(x.start), FirstByte: x.firstByte,
			Attempts: x.attempts, Usage: x.usage.Usage()}
		if !complete {
			res.Err = context.Canceled
			if !x.served {
				res.Status = 0 // the client went away before an answer
			}
		}
		k.done(x.pod, res)
	}
	k.end()
	k.d.grant.Done(k.d.served) // flow control charges what the tenant was served
	k.c.router.release(k.d)
	x.span.End()
	k.c.rm.inflight.Dec()
}
