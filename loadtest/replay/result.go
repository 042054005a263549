package replay

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// ErrorKind classifies a failed request.
type ErrorKind string

// The kinds of failure a Result records.
const (
	// ErrNone is a request that succeeded.
	ErrNone ErrorKind = ""
	// ErrConnect is a request that never reached the server: refused,
	// unreachable, reset before the response.
	ErrConnect ErrorKind = "connect"
	// ErrHTTP4xx and ErrHTTP5xx are error statuses (and ErrHTTPOther any
	// other non-200 status).
	ErrHTTP4xx   ErrorKind = "http_4xx"
	ErrHTTP5xx   ErrorKind = "http_5xx"
	ErrHTTPOther ErrorKind = "http_other"
	// ErrTimeout is a request that ran past Config.Timeout.
	ErrTimeout ErrorKind = "timeout"
	// ErrStreamBroken is a response that ended or failed before its end:
	// no [DONE], a truncated body, an unparsable chunk.
	ErrStreamBroken ErrorKind = "stream_broken"
	// ErrCanceled is a request cut short because the replay was stopped.
	ErrCanceled ErrorKind = "canceled"
)

// ErrorKinds lists the failure kinds in report order.
var ErrorKinds = []ErrorKind{ErrConnect, ErrHTTP4xx, ErrHTTP5xx, ErrHTTPOther, ErrTimeout, ErrStreamBroken, ErrCanceled}

// UnknownPod is the pod of a response that names none.
const UnknownPod = "unknown"

// Result is one request as the client saw it. Times are offsets from the
// start of the replay.
type Result struct {
	// Index is the record's position in the replayed slice.
	Index int
	// Scheduled is when the trace says the request arrives; Sent is when it
	// was sent (later when the concurrency cap delayed it).
	Scheduled, Sent time.Duration
	// Delayed says the concurrency cap held the request back.
	Delayed bool
	// TTFT is the time from Sent to the first chunk with generated text
	// (to the whole response without streaming); 0 when none arrived.
	TTFT time.Duration
	// E2E is the time from Sent to the end of the response.
	E2E time.Duration
	// ITL are the gaps between consecutive text chunks.
	ITL []time.Duration
	// PromptTokens, CachedTokens and CompletionTokens come from usage;
	// PromptTokens is the sent prompt's length when usage is missing, and
	// CompletionTokens the number of text chunks.
	PromptTokens, CachedTokens, CompletionTokens int
	// UsageReported says the response carried usage.
	UsageReported bool
	// Pod is the pod that served the request (UnknownPod if not named).
	Pod string
	// Status is the HTTP status, 0 when there was no response.
	Status int
	// Err is the kind of failure, ErrNone on success; Detail says more.
	Err    ErrorKind
	Detail string
}

// OK reports whether the request succeeded.
func (r *Result) OK() bool { return r.Err == ErrNone }

// ArrivalTTFT is the time from the request's scheduled arrival to its
// first token, what its user waits: TTFT, plus, when the concurrency cap
// delayed the send, the delay. Without it a capped replay past capacity
// measures a closed loop (the cap's backlog waits in the generator,
// uncounted) and understates every wait.
func (r *Result) ArrivalTTFT() time.Duration {
	if r.Delayed && r.Sent > r.Scheduled {
		return r.TTFT + r.Sent - r.Scheduled
	}
	return r.TTFT
}

// statusKind maps a non-200 status to its error kind.
func statusKind(code int) ErrorKind {
	switch {
	case code >= 400 && code < 500:
		return ErrHTTP4xx
	case code >= 500 && code < 600:
		return ErrHTTP5xx
	}
	return ErrHTTPOther
}

// classify maps a transport error to its kind. parent is the replay's
// context (its end cancels a request rather than timing it out);
// gotResponse says whether the headers had arrived, so that a failure after
// them breaks the stream rather than the connection.
func classify(parent context.Context, err error, gotResponse bool) ErrorKind {
	var ne net.Error
	switch {
	case parent.Err() != nil:
		return ErrCanceled
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		(errors.As(err, &ne) && ne.Timeout()):
		return ErrTimeout
	case gotResponse:
		return ErrStreamBroken
	}
	// Anything before a response (refused, reset, EOF on a fresh
	// connection, a malformed status line) is the connection failing.
	return ErrConnect
}
