package proxy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// requestIDHeader is the header vLLM takes its request id from; both legs of
// a disaggregated request carry the same one.
const requestIDHeader = "X-Request-Id"

// ForwardDisaggregated serves r with disaggregated prefill and decode: the
// prefill leg runs on prefill[0] (then prefill[1]... on failure) with the
// body PrefillBody makes of body; the kv_transfer_params of its JSON
// response go into the decode leg's body (DecodeBody), which runs like
// Forward on decode and is relayed to the client. See the package doc for
// the exact fields.
//
// A prefill pod's 4xx answer is relayed to the client and ends the call
// (ErrPrefillRejected). When every prefill attempt failed the client gets
// 502 or 504. Cancellation of r reaches whichever leg is running. Hooks see
// the attempts of both legs; OnPrefillDone marks the end of the prefill leg;
// OnDone is called once, for the decode attempt that ended the call, or for
// the last prefill attempt when the prefill leg failed.
func (p *Proxy) ForwardDisaggregated(w http.ResponseWriter, r *http.Request, body []byte, prefill, decode []Target, h Hooks) error {
	if len(prefill) == 0 || len(decode) == 0 {
		err := fmt.Errorf("%w: %d prefill and %d decode targets", ErrNoTarget, len(prefill), len(decode))
		writeFailure(w, err)
		return err
	}
	pbody, err := openai.PrefillBody(body)
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrBadRequest, err)
		writeFailure(w, err)
		return err
	}
	ctx, cancel := p.callContext(r.Context())
	defer cancel()
	hdr := outboundHeader(r.Header)
	if hdr.Get(requestIDHeader) == "" {
		hdr.Set(requestIDHeader, newRequestID())
	}
	params, err := p.prefillLeg(ctx, w, r, pbody, hdr, p.ranked(prefill), h)
	if err != nil {
		return err
	}
	dbody, err := openai.DecodeBody(body, params)
	if err != nil {
		err = fmt.Errorf("%w: decode body: %w", ErrUpstream, err)
		writeFailure(w, err)
		if h.OnDone != nil {
			h.OnDone(decode[0], Result{Status: StatusOf(err), Err: err})
		}
		return err
	}
	return p.serve(ctx, w, r, dbody, hdr, decode, h)
}

// prefillLeg runs the prefill attempts and returns the kv_transfer_params of
// the first success. On failure it has answered the client and called
// OnPrefillDone and OnDone.
func (p *Proxy) prefillLeg(ctx context.Context, w http.ResponseWriter, r *http.Request, body []byte, hdr http.Header, targets []Target, h Hooks) (json.RawMessage, error) {
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
		res, data, err := p.prefillAttempt(ctx, r, body, hdr, t, h)
		res.Duration = time.Since(start)
		res.Attempts = i + 1
		if err == nil && res.Status >= 400 && res.Status < 500 {
			// The pod refused the request itself: relay its answer.
			err = fmt.Errorf("%w: pod %s answered %d", ErrPrefillRejected, t.Pod, res.Status)
			res.Err = err
			data = openai.UpstreamErrorBody(res.Status, data)
			writeBuffered(w, res.Status, data)
			res.Bytes = int64(len(data))
			p.endPrefill(t, res, h, true)
			return nil, err
		}
		if err == nil && res.Status >= 200 && res.Status < 300 {
			params, perr := openai.KVTransferParams(data)
			if perr == nil {
				p.endPrefill(t, res, h, false)
				return params, nil
			}
			err = fmt.Errorf("%w: pod %s: %w", ErrUpstream, t.Pod, perr)
		}
		if err == nil {
			err = fmt.Errorf("%w: prefill pod %s (%s) answered %d", ErrUpstream, t.Pod, t.Address, res.Status)
		}
		res.Err = err
		if h.OnRetry != nil {
			h.OnRetry(t, i+1, err)
		}
		last, lastErr, lastRes = t, err, res
		if errors.Is(err, ErrCanceled) || ctx.Err() != nil {
			break
		}
	}
	lastRes, lastErr = p.giveUp(ctx, w, r, lastRes, lastErr)
	p.endPrefill(last, lastRes, h, true)
	return nil, lastErr
}

// endPrefill calls OnPrefillDone, and OnDone when the prefill leg ended the
// call.
func (p *Proxy) endPrefill(t Target, res Result, h Hooks, final bool) {
	if h.OnPrefillDone != nil {
		h.OnPrefillDone(t, res)
	}
	if final && h.OnDone != nil {
		h.OnDone(t, res)
	}
}

// prefillAttempt sends the prefill body to t and reads the whole response
// (bounded by MaxPrefillResponseBytes). err is set only when no complete
// response was read.
func (p *Proxy) prefillAttempt(ctx context.Context, r *http.Request, body []byte, hdr http.Header, t Target, h Hooks) (Result, []byte, error) {
	actx, acancel := context.WithCancelCause(ctx)
	defer acancel(nil)
	wd := p.startWatch(t, acancel)
	defer wd.stop()
	res, data, err := p.prefillRelay(ctx, actx, r, body, hdr, t, h)
	err = watchedError(wd, t, err)
	p.settle(ctx, t, wd, res, err, err != nil)
	return res, data, err
}

// prefillRelay is prefillAttempt under the attempt's own context actx.
func (p *Proxy) prefillRelay(ctx, actx context.Context, r *http.Request, body []byte, hdr http.Header, t Target, h Hooks) (Result, []byte, error) {
	var res Result
	req, err := p.newRequest(actx, http.MethodPost, r, body, hdr, t, h)
	if err != nil {
		return res, nil, fmt.Errorf("%w: build prefill request for pod %s: %w", ErrUpstream, t.Pod, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.transport.RoundTrip(req)
	if err != nil {
		return res, nil, attemptError(ctx, r, t, "prefill on", err)
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	data, err := io.ReadAll(io.LimitReader(resp.Body, p.cfg.MaxPrefillResponseBytes+1))
	if err != nil {
		return res, nil, attemptError(ctx, r, t, "read prefill from", err)
	}
	if int64(len(data)) > p.cfg.MaxPrefillResponseBytes {
		return res, nil, fmt.Errorf("%w: prefill response of pod %s exceeds %d bytes", ErrUpstream, t.Pod, p.cfg.MaxPrefillResponseBytes)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		var s usageScanner
		s.Write(data)
		res.Usage = s.usage()
	}
	return res, data, nil
}

// writeBuffered writes a complete buffered JSON response.
func writeBuffered(w http.ResponseWriter, status int, data []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// newRequestID returns a random request id for the legs of a disaggregated
// request.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return "cellrouter-" + hex.EncodeToString(b[:])
}
