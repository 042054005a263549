package openai

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// Sentinel errors the parsers wrap.
var (
	// ErrInvalidRequest means the request body is not a valid request of its
	// kind; the *RequestError names the parameter.
	ErrInvalidRequest = errors.New("openai: invalid request")
	// ErrBodyTooLarge means the request body exceeds the size limit.
	ErrBodyTooLarge = errors.New("openai: request body too large")
)

// The error types of OpenAI's error body.
const (
	// TypeInvalidRequest is the type of every client error (4xx).
	TypeInvalidRequest = "invalid_request_error"
	// TypeServer is the type of errors on the serving side (5xx).
	TypeServer = "server_error"
)

// Codes of the errors the routers write themselves (the "code" field).
const (
	// CodeNotFound is the code of a request for a path the server does not
	// serve (and of a control-plane object that does not exist).
	CodeNotFound = "not_found"
	// CodeMethodNotAllowed is the code of a request whose path is served
	// but not with its method; the Allow header lists the methods that are.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeModelNotFound is the code of GET /v1/models/{id} for a model no
	// backend serves, as OpenAI answers.
	CodeModelNotFound = "model_not_found"
	// CodeUpstreamError is the code of an upstream error answer whose body
	// was not an OpenAI error and was replaced (see UpstreamErrorBody).
	CodeUpstreamError = "upstream_error"
)

// ErrorDetail is the inner object of OpenAI's error body. Param and Code are
// null when empty.
type ErrorDetail struct {
	// Message is a human-readable description.
	Message string `json:"message"`
	// Type is the error class, such as TypeInvalidRequest.
	Type string `json:"type"`
	// Param names the request parameter at fault, if any.
	Param *string `json:"param"`
	// Code is a machine-readable code, if any. OpenAI sends a string; vLLM
	// sends the HTTP status as a number, so it is kept raw.
	Code json.RawMessage `json:"code"`
}

// ErrorBody is OpenAI's error response: {"error": {...}}.
type ErrorBody struct {
	// Error is the error detail.
	Error ErrorDetail `json:"error"`
}

// RequestError is a parse error of a request body. It matches
// ErrInvalidRequest (or ErrBodyTooLarge) under errors.Is.
type RequestError struct {
	// Param is the offending parameter ("prompt", "messages[2].content"), or
	// "" when the body as a whole is at fault.
	Param string
	// Msg says what is wrong, without the "openai:" prefix.
	Msg string
	// Err is the sentinel: ErrInvalidRequest or ErrBodyTooLarge.
	Err error
}

// Error returns "openai: <param>: <msg>".
func (e *RequestError) Error() string {
	if e.Param == "" {
		return "openai: " + e.Msg
	}
	return "openai: " + e.Param + ": " + e.Msg
}

// Unwrap returns the sentinel.
func (e *RequestError) Unwrap() error { return e.Err }

// Status returns the HTTP status the error maps to: 413 for a body too large,
// 400 otherwise.
func (e *RequestError) Status() int {
	if errors.Is(e.Err, ErrBodyTooLarge) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// invalid returns a *RequestError for param with ErrInvalidRequest.
func invalid(param, msg string) *RequestError {
	return &RequestError{Param: param, Msg: msg, Err: ErrInvalidRequest}
}

// NewErrorBody returns an error body with the given type, message, param and
// code; an empty param or code is sent as null.
func NewErrorBody(typ, msg, param, code string) ErrorBody {
	b := ErrorBody{Error: ErrorDetail{Message: msg, Type: typ, Code: json.RawMessage("null")}}
	if param != "" {
		b.Error.Param = &param
	}
	if code != "" {
		b.Error.Code = json.RawMessage(strconv.Quote(code))
	}
	return b
}

// WriteError writes an OpenAI error body with the given status, type and
// message, param and code null.
func WriteError(w http.ResponseWriter, status int, typ, msg string) {
	WriteErrorBody(w, status, NewErrorBody(typ, msg, "", ""))
}

// WriteErrorBody writes body as JSON with the given status.
func WriteErrorBody(w http.ResponseWriter, status int, body ErrorBody) {
	data, err := json.Marshal(body)
	if err != nil {
		// ErrorBody holds only strings and a RawMessage that NewErrorBody
		// built; a caller-made invalid Code lands here.
		data = []byte(`{"error":{"message":"internal error","type":"server_error","param":null,"code":null}}`)
	}
	writeJSON(w, status, data)
}

// writeJSON writes data, a complete JSON document, with the given status.
func writeJSON(w http.ResponseWriter, status int, data []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(status)
	_, _ = w.Write(data)
}

// TypeForStatus returns the error type of an HTTP status: TypeInvalidRequest
// for a 4xx, TypeServer otherwise.
func TypeForStatus(status int) string {
	if status >= 400 && status < 500 {
		return TypeInvalidRequest
	}
	return TypeServer
}

// WriteNotFound writes the 404 answer to a request for a path the server
// does not serve.
func WriteNotFound(w http.ResponseWriter, r *http.Request) {
	WriteErrorBody(w, http.StatusNotFound, NewErrorBody(TypeInvalidRequest,
		"no endpoint "+r.Method+" "+r.URL.Path, "", CodeNotFound))
}

// WriteMethodNotAllowed writes the 405 answer to a request whose path is
// served with other methods: allow lists them (as in the Allow header, which
// it sets).
func WriteMethodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	WriteErrorBody(w, http.StatusMethodNotAllowed, NewErrorBody(TypeInvalidRequest,
		"method "+r.Method+" is not allowed on "+r.URL.Path+"; allowed: "+allow, "", CodeMethodNotAllowed))
}

// WriteRequestError writes err as a 400 or 413 error body when it is (or
// wraps) a *RequestError, with the parameter named, and as a 400 with the
// error's text otherwise.
func WriteRequestError(w http.ResponseWriter, err error) {
	var re *RequestError
	if errors.As(err, &re) {
		WriteErrorBody(w, re.Status(), NewErrorBody(TypeInvalidRequest, re.Error(), re.Param, ""))
		return
	}
	WriteError(w, http.StatusBadRequest, TypeInvalidRequest, err.Error())
}
