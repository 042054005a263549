package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// Forward relays r (its method, path and query, the given body and r's
// headers minus the hop-by-hop ones) to targets[0], and on a failure before
// any byte reached the client to targets[1], and so on, up to
// Config.MaxAttempts targets. The pod's response (status, headers, body) is
// relayed as it comes, each chunk flushed when the response is a stream;
// when every attempt failed, the client gets an OpenAI error body (502, or
// 504 for timeouts; 503 when targets is empty) whose message names no pod,
// unless the last pod answered a 5xx, which is relayed. A pod's error answer
// (4xx, or the last 5xx) keeps its status and headers, and its body when
// that is an OpenAI error (see openai.UpstreamErrorBody).
//
// Forward returns nil when a pod's response was relayed whole (whatever its
// status) and otherwise an error wrapping ErrNoTarget, ErrUpstream,
// ErrTimeout, ErrCanceled or ErrMidStream. It returns when the response is
// complete; the caller owns body and must not change it during the call.
func (p *Proxy) Forward(w http.ResponseWriter, r *http.Request, body []byte, targets []Target, h Hooks) error {
	if len(targets) == 0 {
		err := fmt.Errorf("%w for %s", ErrNoTarget, r.URL.Path)
		writeFailure(w, err)
		return err
	}
	ctx, cancel := p.callContext(r.Context())
	defer cancel()
	return p.serve(ctx, w, r, body, outboundHeader(r.Header), targets, h)
}

// serve runs the attempt loop of one leg that answers the client.
func (p *Proxy) serve(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, hdr http.Header, targets []Target, h Hooks) error {
	targets = p.ranked(targets)
	n := min(len(targets), p.cfg.MaxAttempts)
	var (
		last    Target
		lastErr error
		lastRes Result
	)
	for i := range n {
		t := targets[i]
		if h.OnAttempt != nil {
			h.OnAttempt(t, i+1)
		}
		start := time.Now()
		res, err, retry := p.attempt(ctx, w, r, body, hdr, t, h, i == n-1, start)
		res.Duration = time.Since(start)
		res.Attempts = i + 1
		res.Err = err
		if !retry {
			if h.OnDone != nil {
				h.OnDone(t, res)
			}
			return err
		}
		if h.OnRetry != nil {
			h.OnRetry(t, i+1, err)
		}
		last, lastErr, lastRes = t, err, res
		if errors.Is(err, ErrCanceled) || ctx.Err() != nil {
			break
		}
	}
	lastRes, lastErr = p.giveUp(ctx, w, r, lastRes, lastErr)
	if h.OnDone != nil {
		h.OnDone(last, lastRes)
	}
	return lastErr
}

// giveUp answers the client after a leg ran out of attempts, with the
// leg's final error (see finalError), and returns that error and the last
// attempt's result as the end hooks get them.
func (p *Proxy) giveUp(ctx context.Context, w http.ResponseWriter, r *http.Request, res Result, err error) (Result, error) {
	err = p.finalError(ctx, r, err)
	writeFailure(w, err)
	res.Err, res.Status = err, 0
	if !errors.Is(err, ErrCanceled) {
		res.Status = StatusOf(err)
	}
	return res, err
}

// finalError classifies the error that ended a leg before any byte reached
// the client: the client's cancellation and the call's deadline take
// precedence over the last attempt's error.
func (p *Proxy) finalError(ctx context.Context, r *http.Request, err error) error {
	switch {
	case errors.Is(err, ErrCanceled) || r.Context().Err() != nil:
		if errors.Is(err, ErrCanceled) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrCanceled, context.Cause(r.Context()))
	case ctx.Err() != nil && !errors.Is(err, ErrTimeout):
		return fmt.Errorf("%w: request timeout of %v: %w", ErrTimeout, p.cfg.RequestTimeout, err)
	}
	return err
}

// attemptError wraps an error of an attempt (before any byte reached the
// client) in the sentinel that says why.
func attemptError(ctx context.Context, r *http.Request, t Target, op string, err error) error {
	switch {
	case r.Context().Err() != nil:
		return fmt.Errorf("%w: %s pod %s (%s): %w", ErrCanceled, op, t.Pod, t.Address, err)
	case isTimeout(err) || ctx.Err() != nil:
		return fmt.Errorf("%w: %s pod %s (%s): %w", ErrTimeout, op, t.Pod, t.Address, err)
	}
	return fmt.Errorf("%w: %s pod %s (%s): %w", ErrUpstream, op, t.Pod, t.Address, err)
}

// newRequest builds the request of one attempt.
func (p *Proxy) newRequest(ctx context.Context, method string, r *http.Request, body []byte, hdr http.Header, t Target, h Hooks) (*http.Request, error) {
	var rd io.Reader = http.NoBody
	if len(body) > 0 {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.scheme+"://"+t.Address+r.URL.RequestURI(), rd)
	if err != nil {
		return nil, err
	}
	req.Header = attemptHeader(hdr, t)
	if h.OnRequest != nil {
		h.OnRequest(t, req)
	}
	return req, nil
}

// retryableStatus reports whether a pod's status means "try another pod":
// a 5xx other than 501 Not Implemented (which another pod of the same fleet
// would answer alike).
func retryableStatus(code int) bool {
	return code >= 500 && code != http.StatusNotImplemented
}

// attempt makes one attempt on t. retry reports that it failed before any
// byte reached the client (err is then set). On the last attempt a 5xx
// response is relayed rather than failed.
func (p *Proxy) attempt(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, hdr http.Header, t Target, h Hooks, last bool, start time.Time) (res Result, err error, retry bool) {
	actx, acancel := context.WithCancelCause(ctx)
	defer acancel(nil)
	wd := p.startWatch(t, acancel)
	defer wd.stop()
	res, err, retry = p.relay(ctx, actx, wd, w, r, body, hdr, t, h, last, start)
	p.settle(ctx, t, wd, res, err, retry)
	return res, err, retry
}

// settle feeds the ejector and the counters with an attempt's outcome. An
// attempt ended by the client or the call's deadline (ctx) says nothing of
// its target.
func (p *Proxy) settle(ctx context.Context, t Target, wd *watch, res Result, err error, retry bool) {
	cause := wd.cause()
	if cause == nil && ctx.Err() != nil {
		return
	}
	switch {
	case cause != nil && retry:
		p.stats.firstByteTimeouts.Add(1)
	case cause != nil:
		p.stats.stalls.Add(1)
	}
	switch {
	case cause != nil:
		p.outcome(t.Address, true, true)
	case attemptFailed(err) && (retry || errors.Is(err, ErrMidStream)):
		p.outcome(t.Address, errors.Is(err, ErrTimeout), true)
	case res.Status > 0 && res.Status < 500:
		p.outcome(t.Address, false, false)
	}
}

// watchedError wraps the error of an attempt the watch cancelled in
// ErrTimeout, saying why; other errors are returned as they are.
func watchedError(wd *watch, t Target, err error) error {
	cause := wd.cause()
	if cause == nil {
		return err
	}
	if errors.Is(cause, errIdle) {
		return fmt.Errorf("%w: pod %s (%s) sent no chunk for %v: %w", ErrTimeout, t.Pod, t.Address, wd.idle, cause)
	}
	return fmt.Errorf("%w: pod %s (%s) sent nothing for %v and failed its liveness check: %w", ErrTimeout, t.Pod, t.Address, wd.bound, cause)
}

// relay is attempt under the attempt's own context actx, which wd cancels
// when the target stops answering.
func (p *Proxy) relay(ctx, actx context.Context, wd *watch, w http.ResponseWriter, r *http.Request, body []byte, hdr http.Header, t Target, h Hooks, last bool, start time.Time) (res Result, err error, retry bool) {
	req, err := p.newRequest(actx, r.Method, r, body, hdr, t, h)
	if err != nil {
		return res, fmt.Errorf("%w: build request for pod %s: %w", ErrUpstream, t.Pod, err), true
	}
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return res, watchedError(wd, t, attemptError(ctx, r, t, "send to", err)), true
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if retryableStatus(resp.StatusCode) && !last {
		return res, fmt.Errorf("%w: pod %s (%s) answered %s", ErrUpstream, t.Pod, t.Address, resp.Status), true
	}

	if resp.StatusCode >= 400 {
		res, err, retry = p.relayError(ctx, w, r, resp, t, h, start)
		if retry {
			err = watchedError(wd, t, err)
		}
		return res, err, retry
	}

	bufp := p.bufs.Get().(*[]byte)
	defer p.bufs.Put(bufp)
	buf := *bufp

	// Hold the response back until its first body byte: until then a broken
	// pod can still be replaced.
	nr, rerr := readSome(resp.Body, buf)
	if nr == 0 && rerr != nil && rerr != io.EOF {
		return res, watchedError(wd, t, attemptError(ctx, r, t, "read from", rerr)), true
	}
	wd.tick()

	var scan *usageScanner
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		scan = &usageScanner{}
	}
	sse := isEventStream(resp.Header.Get("Content-Type"))
	stream := resp.ContentLength < 0 || sse
	if sse && p.bounds != nil && resp.StatusCode < 300 {
		p.bounds.observe(t.Address, time.Since(start))
	}
	rc := http.NewResponseController(w)
	copyResponseHeader(w.Header(), resp.Header, p.cfg.RelayResponseHeaders, t.Address)
	if h.OnStatus != nil {
		h.OnStatus(t, resp.StatusCode)
	}
	if h.OnResponse != nil {
		h.OnResponse(t, w.Header())
	}
	w.WriteHeader(resp.StatusCode)
	wd.committed()

	first := true
	for {
		if nr > 0 {
			chunk := buf[:nr]
			if scan != nil {
				scan.Write(chunk)
			}
			nw, werr := w.Write(chunk)
			res.Bytes += int64(nw)
			if werr == nil && stream {
				werr = rc.Flush()
			}
			if werr != nil {
				res.Usage = scan.usage()
				return res, fmt.Errorf("%w: write to client: %w", ErrCanceled, werr), false
			}
			if first {
				first = false
				res.FirstByte = time.Since(start)
				if h.OnFirstByte != nil {
					h.OnFirstByte(t)
				}
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			res.Usage = scan.usage()
			if r.Context().Err() != nil {
				return res, fmt.Errorf("%w: %w: %w", ErrCanceled, ErrMidStream, rerr), false
			}
			if cause := wd.cause(); cause != nil {
				if sse {
					writeStallEvent(w, cause)
				}
				return res, fmt.Errorf("%w: %w", ErrMidStream, watchedError(wd, t, rerr)), false
			}
			if isTimeout(rerr) || ctx.Err() != nil {
				return res, fmt.Errorf("%w: %w: pod %s: %w", ErrMidStream, ErrTimeout, t.Pod, rerr), false
			}
			return res, fmt.Errorf("%w: pod %s: %w", ErrMidStream, t.Pod, rerr), false
		}
		nr, rerr = readSome(resp.Body, buf)
		wd.tick()
	}
	if first && h.OnFirstByte != nil {
		// An empty body: the headers were the first (and only) bytes.
		if !stream {
			_ = rc.Flush()
		}
		res.FirstByte = time.Since(start)
		h.OnFirstByte(t)
	}
	res.Usage = scan.usage()
	return res, nil, false
}

// readSome reads into buf until it got at least one byte or an error.
func readSome(rd io.Reader, buf []byte) (int, error) {
	for {
		n, err := rd.Read(buf)
		if n > 0 || err != nil {
			return n, err
		}
	}
}

// isEventStream reports whether a Content-Type is text/event-stream.
func isEventStream(ct string) bool {
	if ct == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// maxErrorBody bounds an upstream error answer, which is read whole: an
// OpenAI error body is a few hundred bytes.
const maxErrorBody = 64 << 10

// relayError relays a pod's error answer (a status of 400 or more that is
// not retried) as an OpenAI error body: the pod's own when it is one,
// converted from vLLM's older flat shape, or replaced by one that names the
// status when it is not (an HTML page of a load balancer, a stack trace).
// The pod's other headers pass through. A body that cannot be read is a
// failed attempt, retried like a connection error.
func (p *Proxy) relayError(ctx context.Context, w http.ResponseWriter, r *http.Request, resp *http.Response, t Target, h Hooks, start time.Time) (res Result, err error, retry bool) {
	res.Status = resp.StatusCode
	data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if rerr != nil {
		return res, attemptError(ctx, r, t, "read from", rerr), true
	}
	out := openai.UpstreamErrorBody(resp.StatusCode, data)
	copyResponseHeader(w.Header(), resp.Header, p.cfg.RelayResponseHeaders, t.Address)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	if h.OnStatus != nil {
		h.OnStatus(t, resp.StatusCode)
	}
	if h.OnResponse != nil {
		h.OnResponse(t, w.Header())
	}
	w.WriteHeader(resp.StatusCode)
	n, werr := w.Write(out)
	res.Bytes = int64(n)
	res.FirstByte = time.Since(start)
	if h.OnFirstByte != nil {
		h.OnFirstByte(t)
	}
	if werr != nil {
		return res, fmt.Errorf("%w: write to client: %w", ErrCanceled, werr), false
	}
	return res, nil, false
}
