package edge

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
)

// Sentinel errors of the server limits.
var (
	// ErrBodyTooLarge: the body is over Limits.MaxBodyBytes (HTTP 413).
	ErrBodyTooLarge = errors.New("edge: request body too large")
	// ErrHeaderTooLarge: the headers are over Limits.MaxHeaderBytes (HTTP 431).
	ErrHeaderTooLarge = errors.New("edge: request headers too large")
	// ErrBodyTimeout: the body did not arrive within Limits.BodyTimeout
	// (HTTP 408).
	ErrBodyTimeout = errors.New("edge: request body too slow")
	// ErrHeaderTimeout: a request's head did not arrive within
	// Limits.ReadHeaderTimeout (HTTP 408).
	ErrHeaderTimeout = errors.New("edge: request headers too slow")
	// ErrOverloaded: the server holds Limits.MaxConcurrentStreams (HTTP 503).
	ErrOverloaded = errors.New("edge: too many concurrent requests")
)

// OverloadRetryAfter is the Retry-After of ErrOverloaded.
const OverloadRetryAfter = time.Second

// TypeRequests is the OpenAI error type of a rate-limit answer (OpenAI
// answers 429 with type "requests" for request-rate limits).
const TypeRequests = "requests"

// answer is how one error is answered over HTTP and gRPC.
type answer struct {
	status     int
	code       codes.Code
	typ        string // OpenAI error type
	oaiCode    string // OpenAI error code
	param      string
	msg        string
	retryAfter time.Duration
	challenge  string // WWW-Authenticate
}

// answerOf is the one place that maps the edge's errors (and package
// auth's) to HTTP statuses, gRPC codes and OpenAI error bodies. The
// messages say what to do, never echo a key.
func answerOf(err error) answer {
	var ae *auth.Error
	errors.As(err, &ae)
	retry := time.Duration(0)
	if ae != nil {
		retry = ae.RetryAfter
	}
	var pe *ProtocolError
	switch {
	case errors.As(err, &pe):
		return pe.answer()
	case errors.Is(err, auth.ErrMissingKey):
		return answer{http.StatusUnauthorized, codes.Unauthenticated, openai.TypeInvalidRequest, "missing_api_key", "",
			"no API key: send one in the Authorization header as \"Bearer KEY\"", 0, `Bearer realm="cellrouter"`}
	case errors.Is(err, auth.ErrInvalidKey):
		msg := "invalid API key"
		if ae != nil && ae.Detail != "" && ae.Detail != "no such key" {
			msg += ": " + ae.Detail
		}
		return answer{http.StatusUnauthorized, codes.Unauthenticated, openai.TypeInvalidRequest, "invalid_api_key", "",
			msg, 0, `Bearer realm="cellrouter", error="invalid_token"`}
	case errors.Is(err, auth.ErrForbidden):
		need := "the required"
		if ae != nil {
			need = "the " + ae.Need.String()
		}
		who := "the API key does not have "
		if ae != nil && ae.Peer {
			who = "the client certificate's role does not have "
		}
		return answer{http.StatusForbidden, codes.PermissionDenied, openai.TypeInvalidRequest, "insufficient_scope", "",
			who + need + " scope", 0, `Bearer realm="cellrouter", error="insufficient_scope"`}
	case errors.Is(err, auth.ErrRateLimited):
		return answer{http.StatusTooManyRequests, codes.ResourceExhausted, TypeRequests, "rate_limit_exceeded", "",
			"rate limit reached for your tenant's requests per second; retry after the time in Retry-After", retry, ""}
	case errors.Is(err, auth.ErrConcurrency):
		return answer{http.StatusTooManyRequests, codes.ResourceExhausted, TypeRequests, "rate_limit_exceeded", "",
			"your tenant has its most requests in flight; retry after the time in Retry-After", retry, ""}
	case errors.Is(err, auth.ErrReservedSalt):
		return answer{http.StatusBadRequest, codes.InvalidArgument, openai.TypeInvalidRequest, "invalid_cache_salt", "cache_salt",
			"cache_salt may not start with " + strconv.Quote(auth.SaltPrefix), 0, ""}
	case errors.Is(err, auth.ErrPriority):
		return answer{http.StatusBadRequest, codes.InvalidArgument, openai.TypeInvalidRequest, "invalid_priority", auth.PriorityHeader,
			"the " + auth.PriorityHeader + " header must be sheddable, standard or critical", 0, ""}
	case errors.Is(err, ErrBodyTooLarge):
		return answer{http.StatusRequestEntityTooLarge, codes.ResourceExhausted, openai.TypeInvalidRequest, "body_too_large", "",
			"the request body is larger than this server accepts", 0, ""}
	case errors.Is(err, ErrHeaderTooLarge):
		return answer{http.StatusRequestHeaderFieldsTooLarge, codes.ResourceExhausted, openai.TypeInvalidRequest, "headers_too_large", "",
			"the request headers are larger than this server accepts", 0, ""}
	case errors.Is(err, ErrBodyTimeout):
		return answer{http.StatusRequestTimeout, codes.DeadlineExceeded, openai.TypeInvalidRequest, "request_timeout", "",
			"the request body did not arrive in time", 0, ""}
	case errors.Is(err, ErrBudget):
		return answer{http.StatusServiceUnavailable, codes.Unavailable, openai.TypeServer, "server_overloaded", "",
			"the server holds its most buffered request bytes; retry after the time in Retry-After", OverloadRetryAfter, ""}
	case errors.Is(err, ErrHeaderTimeout):
		return answer{http.StatusRequestTimeout, codes.DeadlineExceeded, openai.TypeInvalidRequest, "request_timeout", "",
			"the request headers did not arrive in time", 0, ""}
	case errors.Is(err, ErrOverloaded):
		return answer{http.StatusServiceUnavailable, codes.Unavailable, openai.TypeServer, "server_overloaded", "",
			"the server is at its limit of concurrent requests; retry after the time in Retry-After", OverloadRetryAfter, ""}
	}
	return answer{http.StatusInternalServerError, codes.Internal, openai.TypeServer, "internal_error", "", "internal error", 0, ""}
}

// retrySeconds renders a Retry-After in whole seconds, at least 1.
func retrySeconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// WriteHTTP answers err over HTTP: its status, OpenAI's error body, and
// Retry-After or WWW-Authenticate when they apply.
func WriteHTTP(w http.ResponseWriter, err error) {
	a := answerOf(err)
	if a.retryAfter > 0 {
		w.Header().Set("Retry-After", retrySeconds(a.retryAfter))
	}
	if a.challenge != "" {
		w.Header().Set("WWW-Authenticate", a.challenge)
	}
	openai.WriteErrorBody(w, a.status, openai.NewErrorBody(a.typ, a.msg, a.param, a.oaiCode))
}

// GRPCError returns err as a gRPC status error with its code and message.
func GRPCError(err error) error {
	a := answerOf(err)
	return status.Error(a.code, a.msg)
}

// HTTPStatus returns the HTTP status err is answered with.
func HTTPStatus(err error) int { return answerOf(err).status }
