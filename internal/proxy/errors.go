package proxy

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"

	"github.com/cellrouter/cellrouter/api/openai"
)

// Sentinel errors Forward and ForwardDisaggregated wrap.
var (
	// ErrNoTarget means the call got no target to send the request to; the
	// client got a 503.
	ErrNoTarget = errors.New("proxy: no target")
	// ErrUpstream means every attempt failed before a byte reached the
	// client (connection errors, 5xx statuses, broken responses); the
	// client got a 502.
	ErrUpstream = errors.New("proxy: upstream failed")
	// ErrTimeout means the pods or the call timed out before a byte reached
	// the client; the client got a 504. A timeout after the first byte
	// matches ErrMidStream as well.
	ErrTimeout = errors.New("proxy: upstream timed out")
	// ErrCanceled means the client went away; the pod's request was
	// cancelled and nothing (more) was written.
	ErrCanceled = errors.New("proxy: client canceled")
	// ErrMidStream means the upstream failed after bytes had reached the
	// client: the client's response is truncated. The handler should
	// panic(http.ErrAbortHandler) so the client sees the failure.
	ErrMidStream = errors.New("proxy: upstream failed mid-response")
	// ErrPrefillRejected means the prefill pod answered with a client error
	// (4xx), which was relayed to the client; no decode leg ran.
	ErrPrefillRejected = errors.New("proxy: prefill rejected the request")
	// ErrBadRequest means the request body could not be rewritten for the
	// disaggregated legs; the client got a 400.
	ErrBadRequest = errors.New("proxy: bad request")
)

// StatusOf returns the HTTP status the client got for an error of Forward or
// ForwardDisaggregated: 503, 502, 504, 400; 499 (nginx's "client closed
// request") for ErrCanceled; 200 for nil and errors after the first byte;
// 400 for ErrPrefillRejected (Result.Status has the prefill pod's exact 4xx).
func StatusOf(err error) int {
	switch {
	case err == nil, errors.Is(err, ErrMidStream):
		return http.StatusOK
	case errors.Is(err, ErrCanceled):
		return 499
	case errors.Is(err, ErrNoTarget):
		return http.StatusServiceUnavailable
	case errors.Is(err, ErrTimeout):
		return http.StatusGatewayTimeout
	case errors.Is(err, ErrBadRequest), errors.Is(err, ErrPrefillRejected):
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

// isTimeout reports whether err is a timeout: a dial, header or context
// deadline.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// writeFailure writes the OpenAI error body for a call that failed before any
// byte reached the client. It writes nothing for ErrCanceled: the client is
// gone. The message says what failed in words that hold for any fleet (see
// FailureMessage); err, with the pods' ids and addresses, is for the
// caller's logs and spans.
func writeFailure(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrCanceled) {
		return
	}
	typ, code := openai.TypeServer, ""
	switch {
	case errors.Is(err, ErrNoTarget):
		code = "no_pod_available"
	case errors.Is(err, ErrTimeout):
		code = "upstream_timeout"
	case errors.Is(err, ErrBadRequest):
		typ = openai.TypeInvalidRequest
	default:
		code = "upstream_failure"
	}
	openai.WriteErrorBody(w, StatusOf(err), openai.NewErrorBody(typ, FailureMessage(err), "", code))
}

// FailureMessage returns the message a client gets for an error of Forward,
// ForwardDisaggregated or ServeModel: what failed, without the upstream's
// ids, addresses or answers, which stay in err for the logs. A request body
// the proxy could not rewrite is the client's fault, and its message says
// which parameter.
func FailureMessage(err error) string {
	var re *openai.RequestError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrCanceled):
		return "the client closed the request"
	case errors.Is(err, ErrNoTarget):
		return "no upstream server is available to serve the request"
	case errors.Is(err, ErrTimeout):
		return "the upstream server timed out before answering"
	case errors.As(err, &re):
		return re.Error()
	case errors.Is(err, ErrBadRequest):
		return "the request body could not be prepared for the upstream server"
	case errors.Is(err, ErrMidStream):
		return "the upstream server failed during the response"
	}
	return "the upstream server failed to answer"
}

// FailureLevel returns the level at which a router logs a failed request
// whose client got status: warning when the router or its upstream failed
// (a 5xx, a response cut short), debug for the client's own faults (a 4xx)
// and a client that went away.
func FailureLevel(status int, err error) slog.Level {
	if (status >= 500 || errors.Is(err, ErrMidStream)) && !errors.Is(err, ErrCanceled) {
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// StatusClass names an HTTP status's class for metrics: "2xx", "4xx",
// "5xx", or "none" when no response was received (0).
func StatusClass(code int) string {
	switch {
	case code == 0:
		return "none"
	case code < 300:
		return "2xx"
	case code < 500:
		return "4xx"
	}
	return "5xx"
}
