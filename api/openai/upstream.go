package openai

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// vllmFlatError is the error body older vLLM servers send: the detail at the
// top level, {"object":"error","message":...,"type":...,"param":...,"code":400}.
type vllmFlatError struct {
	Object  string          `json:"object"`
	Message *string         `json:"message"`
	Type    string          `json:"type"`
	Param   *string         `json:"param"`
	Code    json.RawMessage `json:"code"`
}

// ParseErrorBody reads the body of an upstream error answer. It accepts
// OpenAI's shape, {"error":{"message":...,"type":...}} (nested reports
// true: the body can be relayed as it is), and the flat shape of older vLLM
// servers, {"object":"error","message":...}, which it returns nested. ok is
// false for anything else: not JSON, or no message string.
func ParseErrorBody(data []byte) (body ErrorBody, nested, ok bool) {
	var probe struct {
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return ErrorBody{}, false, false
	}
	if len(probe.Error) > 0 && probe.Error[0] == '{' {
		var d struct {
			Message *string         `json:"message"`
			Type    string          `json:"type"`
			Param   *string         `json:"param"`
			Code    json.RawMessage `json:"code"`
		}
		if err := json.Unmarshal(probe.Error, &d); err != nil || d.Message == nil {
			return ErrorBody{}, false, false
		}
		return ErrorBody{Error: ErrorDetail{Message: *d.Message, Type: d.Type, Param: d.Param, Code: rawOrNull(d.Code)}}, true, true
	}
	var f vllmFlatError
	if err := json.Unmarshal(data, &f); err != nil || f.Object != "error" || f.Message == nil {
		return ErrorBody{}, false, false
	}
	return ErrorBody{Error: ErrorDetail{Message: *f.Message, Type: f.Type, Param: f.Param, Code: rawOrNull(f.Code)}}, false, true
}

// rawOrNull returns raw, or JSON null when it is empty.
func rawOrNull(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("null")
	}
	return raw
}

// UpstreamErrorBody returns what a router sends its client for an upstream
// error answer with the given status and body: the body itself when it is
// an OpenAI error, vLLM's flat error nested into OpenAI's shape, and
// otherwise a body of its own that names only the status (an HTML page or a
// stack trace from behind the router is never shown). The result is always
// an OpenAI error body.
func UpstreamErrorBody(status int, data []byte) []byte {
	body, nested, ok := ParseErrorBody(data)
	if ok && nested {
		return data
	}
	if !ok {
		msg := "the upstream server answered " + strconv.Itoa(status)
		if t := http.StatusText(status); t != "" {
			msg += " " + t
		}
		body = NewErrorBody(TypeForStatus(status), msg, "", CodeUpstreamError)
	}
	if body.Error.Type == "" {
		body.Error.Type = TypeForStatus(status)
	}
	out, err := json.Marshal(body)
	if err != nil { // Code is valid JSON: ParseErrorBody decoded it
		out, _ = json.Marshal(NewErrorBody(TypeForStatus(status), "the upstream server answered "+strconv.Itoa(status), "", CodeUpstreamError))
	}
	return out
}
