package epp

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/edge"
)

// Error is an answer the picker gives the client instead of endpoints: the
// gateway sends Status, Header and Body back as an ImmediateResponse.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Header holds the answer's headers (Content-Type, Retry-After).
	Header http.Header
	// Body is the answer's body, OpenAI's error shape.
	Body []byte
}

// Error returns "epp: answered STATUS".
func (e *Error) Error() string { return "epp: answered " + strconv.Itoa(e.Status) }

// Answer records what write writes as an *Error, so that the handlers'
// own error writers (openai.WriteErrorBody, edge.WriteHTTP) answer in
// picker mode exactly as they answer over HTTP.
func Answer(write func(w http.ResponseWriter)) *Error {
	rec := &recorder{h: http.Header{}}
	write(rec)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &Error{Status: rec.status, Header: rec.h, Body: rec.body}
}

// recorder is the http.ResponseWriter of Answer.
type recorder struct {
	h      http.Header
	status int
	body   []byte
}

func (r *recorder) Header() http.Header { return r.h }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	r.body = append(r.body, p...)
	return len(p), nil
}

// answerOf maps an error of the picker, the admitter or the body to the
// answer the client gets.
func answerOf(err error) *Error {
	var e *Error
	var re *openai.RequestError
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, ErrNoEndpoint):
		return Answer(func(w http.ResponseWriter) {
			openai.WriteErrorBody(w, http.StatusServiceUnavailable, openai.NewErrorBody(openai.TypeServer,
				"no endpoint is available to take the request", "", "no_pod_available"))
		})
	case errors.Is(err, ErrShed):
		return Answer(func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			openai.WriteErrorBody(w, http.StatusTooManyRequests, openai.NewErrorBody(edge.TypeRequests,
				"the fleet is overloaded: retry later", "", "request_shed"))
		})
	case errors.As(err, &re):
		return Answer(func(w http.ResponseWriter) { openai.WriteRequestError(w, err) })
	case errors.Is(err, edge.ErrBodyTooLarge):
		return Answer(func(w http.ResponseWriter) { edge.WriteHTTP(w, err) })
	}
	if edge.HTTPStatus(err) != http.StatusInternalServerError {
		return Answer(func(w http.ResponseWriter) { edge.WriteHTTP(w, err) })
	}
	return Answer(func(w http.ResponseWriter) {
		openai.WriteErrorBody(w, http.StatusInternalServerError, openai.NewErrorBody(openai.TypeServer,
			"the picker could not route the request", "", "routing_failure"))
	})
}
