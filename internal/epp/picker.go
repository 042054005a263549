package epp

import (
	"context"
	"errors"
	"net/http"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// Sentinel errors a Picker returns for the protocol's two refusals; the
// server answers them with an ImmediateResponse in OpenAI's error shape.
var (
	// ErrNoEndpoint: no endpoint is eligible (none ready, or none in the
	// subset hint); answered 503.
	ErrNoEndpoint = errors.New("epp: no endpoint eligible")
	// ErrShed: the request is dropped under load; answered 429.
	ErrShed = errors.New("epp: request shed")
)

// Request is what the gateway told the picker about one HTTP request once
// its headers and whole body arrived. The picker owns nothing of it beyond
// the call, except what it copies.
type Request struct {
	// Method and Path are the request's :method and :path (the path
	// without its query).
	Method, Path string
	// Header holds the request headers, pseudo-headers (":path") left out.
	Header http.Header
	// Body is the assembled request body.
	Body []byte
	// Kind is the OpenAI endpoint of Path; OpenAI is the parsed body. Both
	// are zero for a path that is not /v1/completions or
	// /v1/chat/completions (the server then passes the body unparsed).
	Kind   openai.Kind
	OpenAI *openai.Request
	// Principal is who the request acts for (the server's Admitter; all
	// scopes when the server has none). The Context passed to Pick carries
	// it as well (edge.PrincipalFrom).
	Principal auth.Principal
	// Subset lists the endpoints the gateway allows ("ip:port" or "ip"),
	// when HasSubset; an empty subset allows nothing.
	Subset    []string
	HasSubset bool
}

// InSubset reports whether addr ("ip:port") may be picked under the
// request's subset hint: always without one, else when the subset names
// addr or its host.
func (r *Request) InSubset(addr string) bool {
	if !r.HasSubset {
		return true
	}
	host := addr
	if i := lastColon(addr); i >= 0 {
		host = addr[:i]
		if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1]
		}
	}
	for _, s := range r.Subset {
		if s == addr || s == host {
			return true
		}
	}
	return false
}

func lastColon(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ':':
			return i
		case ']':
			return -1
		}
	}
	return -1
}

// Result is a picker's answer: where the gateway sends the request.
type Result struct {
	// Endpoints are "ip:port" of the pick, then the ordered fallbacks;
	// never empty (a picker with nothing to offer returns ErrNoEndpoint).
	Endpoints []string
	// Body, when not nil, replaces the request body (the server sets a
	// matching Content-Length).
	Body []byte
	// Header holds request headers to set before the gateway forwards the
	// request (a cache hint, the tenant); Remove names headers to drop.
	Header http.Header
	Remove []string
	// Exchange, when not nil, follows the response; the server calls its
	// Finish exactly once.
	Exchange Exchange
}

// Picker chooses the endpoints of a request. Pick is called concurrently,
// once per request, after the whole body arrived; it may block (a pipeline
// that tokenizes, a picker that holds the request until its endpoint is
// ready: the cell's flow control and prefix wait) and must return when ctx
// ends (the gateway cancelled the stream), having undone what it did. An error is answered with
// an ImmediateResponse: an *Error as it is, ErrNoEndpoint 503, ErrShed
// 429, anything else 500.
type Picker interface {
	Pick(ctx context.Context, req *Request) (*Result, error)
}

// PickerFunc adapts a function to Picker.
type PickerFunc func(ctx context.Context, req *Request) (*Result, error)

// Pick calls f.
func (f PickerFunc) Pick(ctx context.Context, req *Request) (*Result, error) { return f(ctx, req) }

// Exchange follows one picked request's response, as proxy mode follows
// its own call. The server calls its methods from the stream's goroutine,
// one at a time, in this order: Served once when the response headers
// arrive (never when the gateway answered without an upstream response),
// Body for every response body chunk, Finish once at the end. None may
// block.
type Exchange interface {
	// Served reports the endpoint the gateway says served the request
	// ("" when it did not say: the pick is assumed) and the response
	// status; it returns headers to set on the response to the client.
	Served(endpoint string, status int) http.Header
	// Body reports a chunk of the response body, in order; the slice is
	// valid only during the call.
	Body(chunk []byte)
	// Finish ends the exchange: complete says the response reached its
	// end of stream; otherwise the request was cancelled, refused after
	// the pick, or the gateway went away.
	Finish(complete bool)
}

// Admitter decides whom a request acts for from its headers, as proxy
// mode's guard does from an HTTP request; release ends the admission
// (a tenant's concurrency ticket) and is called when the stream ends.
// A refusal is an error the server answers with its own writer.
type Admitter interface {
	AdmitHeader(h http.Header) (p auth.Principal, release func(), err error)
}

// ErrBodyMode: the gateway streams the request body in a mode other than
// FULL_DUPLEX_STREAMED, in which the picker cannot hold the headers'
// answer until it has the body; answered 500 (a gateway misconfiguration).
var ErrBodyMode = errors.New("epp: the gateway's request_body_mode must be FULL_DUPLEX_STREAMED")
