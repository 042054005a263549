package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"unicode/utf8"
)

// DefaultMaxBodyBytes is the request body limit ReadBody applies when given
// none: 32 MiB, room for a 1M-token prompt as token ids.
const DefaultMaxBodyBytes = 32 << 20

// Kind is the kind of a generation request.
type Kind uint8

// The request kinds.
const (
	// KindCompletion is POST /v1/completions.
	KindCompletion Kind = 1
	// KindChat is POST /v1/chat/completions.
	KindChat Kind = 2
)

// The paths of the data-plane endpoints.
const (
	PathCompletions     = "/v1/completions"
	PathChatCompletions = "/v1/chat/completions"
	PathModels          = "/v1/models"
)

// String returns "completion" or "chat".
func (k Kind) String() string {
	switch k {
	case KindCompletion:
		return "completion"
	case KindChat:
		return "chat"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// KindOf returns the kind of request served at path, and false for a path
// that is neither /v1/completions nor /v1/chat/completions.
func KindOf(path string) (Kind, bool) {
	switch path {
	case PathCompletions:
		return KindCompletion, true
	case PathChatCompletions:
		return KindChat, true
	}
	return 0, false
}

// Request is what a router reads of a generation request. The parser fills
// only these fields; the body it came from stays the source of truth for
// everything else.
type Request struct {
	// Kind says which endpoint the request is for.
	Kind Kind
	// Model is the requested model name, "" when absent (vLLM then serves
	// its one model). In vLLM a LoRA adapter is requested by giving its name
	// here, so Model is also the adapter name, part of the cache identity.
	Model string
	// Prompt is the completion prompt (KindCompletion only).
	Prompt Prompt
	// Messages are the chat messages (KindChat only), never empty.
	Messages []Message
	// Stream is the stream flag.
	Stream bool
	// IncludeUsage is stream_options.include_usage: a streamed response ends
	// with a chunk that carries usage.
	IncludeUsage bool
	// MaxTokens is the output token budget: max_completion_tokens when
	// present, else max_tokens, else -1.
	MaxTokens int
	// CacheSalt is vLLM's cache_salt, "" when absent. Requests with
	// different salts never share cached blocks.
	CacheSalt string
	// KVTransferParams is vLLM's kv_transfer_params object (disaggregated
	// prefill/decode), nil when absent or null. It aliases no input bytes.
	KVTransferParams json.RawMessage
	// User is the user field, "" when absent.
	User string
}

// streamOptions is the stream_options object.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ParseCompletion parses a POST /v1/completions body.
func ParseCompletion(body []byte) (*Request, error) {
	return ParseRequest(KindCompletion, body)
}

// ParseChat parses a POST /v1/chat/completions body.
func ParseChat(body []byte) (*Request, error) {
	return ParseRequest(KindChat, body)
}

// ParseRequest parses a request body of the given kind. The error is a
// *RequestError naming the parameter at fault. The Request does not alias
// body. A field given twice, invalid UTF-8 and well-known sampling fields
// of the wrong type or range are errors (validate.go).
func ParseRequest(kind Kind, body []byte) (*Request, error) {
	if kind != KindCompletion && kind != KindChat {
		return nil, invalid("", "unknown request kind "+kind.String())
	}
	// The raw values of the fields the router reads; the last occurrence
	// wins. Every other value is validated as it passes.
	var model, prompt, messages, stream, streamOpts, maxTokens, maxCompletion, salt, kv, user []byte
	var keys keySet
	var fieldErr error
	badUTF8 := !utf8.Valid(body)
	err := walkObject(body, func(key, val []byte) error {
		// A field's own error waits for the end of the walk: invalid
		// JSON further on is the error to report.
		if fieldErr == nil && badUTF8 {
			fieldErr = utf8Error(key, val)
		}
		if keys.add(key) && fieldErr == nil {
			fieldErr = invalid(string(key), "is given more than once")
		}
		switch string(key) {
		case "model":
			model = val
		case "prompt":
			if kind != KindCompletion {
				return validValue(val)
			}
			prompt = val
		case "messages":
			if kind != KindChat {
				return validValue(val)
			}
			messages = val
		case "stream":
			stream = val
		case "stream_options":
			streamOpts = val
		case "max_tokens":
			maxTokens = val
		case "max_completion_tokens":
			maxCompletion = val
		case "cache_salt":
			salt = val
		case "kv_transfer_params":
			kv = val
		case "user":
			user = val
		default:
			if err := validValue(val); err != nil {
				return err
			}
			if f, ok := knownFields[string(key)]; ok && fieldErr == nil {
				fieldErr = f.check(f.name, val)
			}
			return nil
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if fieldErr != nil || badUTF8 {
		// The typed fields are checked below; the body must be JSON
		// before one field is blamed.
		if validValue(body) != nil {
			return nil, invalid("", errSyntax)
		}
		if fieldErr == nil {
			fieldErr = invalid("", "the body must be valid UTF-8")
		}
		return nil, fieldErr
	}
	req := &Request{Kind: kind, MaxTokens: -1}
	if err := fillRequest(req, model, prompt, messages, stream, streamOpts, maxTokens, maxCompletion, salt, kv, user); err != nil {
		// prompt and messages are validated while they are parsed; when
		// they are not even JSON, that is the error to report, whichever
		// check failed first.
		if verr := validValue(prompt); prompt != nil && verr != nil {
			return nil, verr
		}
		if verr := validValue(messages); messages != nil && verr != nil {
			return nil, verr
		}
		return nil, err
	}
	// Escaped text must be Unicode too where the router reads it.
	if unpairedSurrogate(prompt) {
		return nil, invalid("prompt", "must be valid Unicode: an unpaired surrogate escape")
	}
	if unpairedSurrogate(messages) {
		return nil, invalid("messages", "must be valid Unicode: an unpaired surrogate escape")
	}
	// The objects the router reads inside values: each message and
	// content part, and stream_options.
	if d, dup := duplicateKey(messages, 4); dup {
		return nil, invalid("messages"+d, "is given more than once")
	}
	if d, dup := duplicateKey(streamOpts, 1); dup {
		return nil, invalid("stream_options"+d, "is given more than once")
	}
	return req, nil
}

// fillRequest decodes the raw fields into req.
func fillRequest(req *Request, model, prompt, messages, stream, streamOpts, maxTokens, maxCompletion, salt, kv, user []byte) error {
	var err error
	if req.Model, err = stringField("model", model); err != nil {
		return err
	}
	if req.CacheSalt, err = stringField("cache_salt", salt); err != nil {
		return err
	}
	if req.User, err = stringField("user", user); err != nil {
		return err
	}
	switch string(stream) {
	case "", "null", "false":
	case "true":
		req.Stream = true
	default:
		if err := validValue(stream); err != nil {
			return err
		}
		return invalid("stream", "must be a boolean")
	}
	if !isAbsent(streamOpts) {
		var so streamOptions
		if streamOpts[0] != '{' {
			if err := validValue(streamOpts); err != nil {
				return err
			}
			return invalid("stream_options", "must be an object")
		}
		if err := json.Unmarshal(streamOpts, &so); err != nil {
			return decodeErrorAt("stream_options", err)
		}
		req.IncludeUsage = so.IncludeUsage
	}
	mt, mtSet, err := intField("max_tokens", maxTokens)
	if err != nil {
		return err
	}
	mct, mctSet, err := intField("max_completion_tokens", maxCompletion)
	if err != nil {
		return err
	}
	switch {
	case mctSet:
		req.MaxTokens = mct
	case mtSet:
		req.MaxTokens = mt
	}
	if !isAbsent(kv) {
		if err := validValue(kv); err != nil {
			return err
		}
		if kv[0] != '{' {
			return invalid("kv_transfer_params", "must be an object")
		}
		req.KVTransferParams = append(json.RawMessage(nil), kv...)
	}
	switch req.Kind {
	case KindCompletion:
		if isAbsent(prompt) {
			return invalid("prompt", "is required")
		}
		req.Prompt, err = parsePrompt(prompt)
	case KindChat:
		if isAbsent(messages) {
			return invalid("messages", "is required")
		}
		req.Messages, err = parseMessages(messages)
	}
	return err
}

// validValue checks that a raw value is valid JSON.
func validValue(val []byte) error {
	if !json.Valid(val) {
		return invalid("", errSyntax)
	}
	return nil
}

// stringField decodes a string-or-null field.
func stringField(name string, val []byte) (string, error) {
	if isAbsent(val) {
		return "", nil
	}
	if val[0] != '"' {
		if err := validValue(val); err != nil {
			return "", err
		}
		return "", invalid(name, "must be a string")
	}
	// walkObject checked the string; without escapes (and with valid
	// UTF-8, which encoding/json would repair) it is its bytes.
	if bytes.IndexByte(val, '\\') < 0 && utf8.Valid(val) {
		return string(val[1 : len(val)-1]), nil
	}
	var s string
	if err := json.Unmarshal(val, &s); err != nil {
		return "", invalid(name, "must be a string")
	}
	return s, nil
}

// intField decodes a non-negative integer-or-null field.
func intField(name string, val []byte) (int, bool, error) {
	if isAbsent(val) {
		return 0, false, nil
	}
	if err := validValue(val); err != nil {
		return 0, false, err
	}
	v, err := strconv.Atoi(string(val))
	if err != nil {
		return 0, false, invalid(name, "must be an integer")
	}
	if v < 0 {
		return 0, false, invalid(name, "must not be negative")
	}
	return v, true, nil
}

// isAbsent reports whether a raw field was absent or null.
func isAbsent(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decodeError turns an encoding/json error into a *RequestError.
func decodeError(err error) *RequestError {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return invalid(typeErr.Field, "must be of type "+jsonTypeName(typeErr.Type.Kind().String())+", got "+typeErr.Value)
	}
	var syntaxErr *json.SyntaxError
	if errors.As(err, &syntaxErr) {
		return invalid("", errSyntax+": "+syntaxErr.Error())
	}
	return invalid("", "body does not decode: "+err.Error())
}

// jsonTypeName names a Go kind the way a JSON client thinks of it.
func jsonTypeName(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	}
	return "number"
}

// ReadBody reads r's body, at most limit bytes (DefaultMaxBodyBytes when
// limit <= 0). A longer body yields a *RequestError matching ErrBodyTooLarge.
// w may be nil; when given, the server closes the connection after an
// oversized body as http.MaxBytesReader arranges.
func ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	if r.ContentLength > limit {
		return nil, &RequestError{Msg: "body of " + strconv.FormatInt(r.ContentLength, 10) + " bytes exceeds the limit of " + strconv.FormatInt(limit, 10), Err: ErrBodyTooLarge}
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength > 0 {
		// One allocation of the announced size: net/http stops the body
		// there, so nothing more can follow.
		body := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(rd, body); err != nil {
			return nil, bodyError(err, limit)
		}
		return body, nil
	}
	buf := bytes.NewBuffer(make([]byte, 0, 512))
	if _, err := buf.ReadFrom(rd); err != nil {
		return nil, bodyError(err, limit)
	}
	return buf.Bytes(), nil
}

// bodyError turns a failed body read into the error ReadBody returns.
func bodyError(err error, limit int64) error {
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return &RequestError{Msg: "body exceeds the limit of " + strconv.FormatInt(limit, 10) + " bytes", Err: ErrBodyTooLarge}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalid("", "body ended early")
	}
	return fmt.Errorf("openai: read body: %w", err)
}
