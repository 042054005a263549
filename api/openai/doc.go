// Package openai holds the wire types of the OpenAI-compatible API that the
// routers serve and that vLLM pods speak: POST /v1/completions, POST
// /v1/chat/completions and GET /v1/models, their responses, stream chunks,
// usage and error bodies.
//
// # Typed where the router looks, preserved elsewhere
//
// A router needs only a few fields of a request: the model (which, in vLLM,
// also names a LoRA adapter), the prompt or the chat messages (the routing
// key), stream, the token budget, vLLM's cache_salt (part of the cache
// identity), vLLM's kv_transfer_params (disaggregated prefill/decode) and the
// user. ParseCompletion and ParseChat extract exactly those into a Request
// and ignore the rest; the router forwards the original body bytes, so every
// field it does not type (sampling parameters, tools, response_format,
// vLLM extensions...) reaches the engine untouched. When the router must
// change a body (the prefill and decode legs of disaggregated serving),
// Rewrite edits top-level fields and keeps every other field as it was.
//
// # Validation
//
// The router forwards a body it has read, so it must not read one thing
// where the engine reads another, nor pass on what the engine would choke
// on after the router spent work on it. Decided field by field
// (validate.go):
//
//   - The fields the router reads (model, prompt, messages, stream,
//     stream_options, max_tokens, max_completion_tokens, cache_salt,
//     kv_transfer_params, user) are decoded strictly: a wrong type or a
//     negative token budget is a 400 naming the parameter.
//   - A member given twice is a 400 naming it, at the top level (any
//     member: parsers disagree on which of two "model" keys counts, so
//     the router and the engine could see different models) and inside
//     the objects the router reads (each message and content part,
//     stream_options). Deeper objects the router does not read (tools,
//     response_format) are the engine's to judge.
//   - The body must be valid UTF-8 (RFC 8259): invalid bytes are a 400
//     naming the top-level member holding them, and so is an unpaired
//     surrogate escape ("\ud800") in prompt or messages. encoding/json
//     would replace either with U+FFFD, so the router would hash and
//     tokenize a prompt the engine never sees.
//   - The well-known sampling fields are checked for type and range, null
//     allowed: temperature (a number, at least 0), top_p (0 to 1),
//     presence_penalty and frequency_penalty (-2 to 2), n (an integer, at
//     least 1), seed (an integer), stop (a string or an array of
//     strings). Every other field only has to be valid JSON; its meaning
//     is the engine's.
//
// # Prompts
//
// A completion prompt comes in four shapes: a string, an array of strings, an
// array of token ids, or an array of arrays of token ids. A batch (the array
// forms with several prompts) is routed by its first prompt: Prompt holds the
// first prompt's text or token ids and the number of prompts in the batch.
// Token ids are uint32 (the type of blockhash.Token).
//
// # Parsing cost
//
// A 4k-token prompt is the common case of a cache-aware router, and
// encoding/json scans such a body two or three times (validation, skipping,
// decoding). The parser instead walks the top-level object once (walk.go),
// validating each value exactly once: token arrays by a strict hand-written
// scanner, the few typed fields by small decoders, every other value by
// json.Valid. The fuzz tests hold it to encoding/json: a body is accepted
// only if it is valid JSON (and valid UTF-8, without a repeated top-level
// key, with well-typed sampling fields), and what is read equals what
// encoding/json reads.
//
// # Errors
//
// Parse errors are *RequestError values: a message, the offending parameter
// and ErrInvalidRequest (or ErrBodyTooLarge) under errors.Is. WriteError
// writes OpenAI's error shape,
// {"error":{"message":...,"type":...,"param":...,"code":...}}, which is the
// shape of every error the routers answer, their own (WriteNotFound,
// WriteMethodNotAllowed, WriteModelNotFound) and their upstreams' alike:
// UpstreamErrorBody passes an engine's OpenAI error through as it is, nests
// the flat {"object":"error","message":...} of older vLLM servers, and
// replaces anything else (an HTML page, a stack trace) with a message that
// names only the status.
//
// # Prompt limits
//
// PromptLimits bound each model's prompt as a router sees it: CheckText
// the bytes of its text (a prompt string, or a chat's contents together)
// before anything tokenizes it, CheckTokens its tokens; a prompt over
// either is a *PromptTooLongError, answered as OpenAI answers a prompt
// longer than the model's context: 400, invalid_request_error,
// context_length_exceeded.
//
// # Models
//
// vLLM serves GET /v1/models but not OpenAI's GET /v1/models/{id};
// ParseModelList and ModelList.Find let a router answer the latter from the
// former.
package openai
