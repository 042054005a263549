package pipeline

import "net/http"

// Message is one chat message (text parts only).
type Message struct {
	Role, Content string
}

// Request is what the pipeline knows of an OpenAI-compatible request.
type Request struct {
	// Chat is true for /v1/chat/completions.
	Chat bool
	// Model is the requested model (may name a LoRA adapter).
	Model string
	// LoRA is the adapter, when the model field names one.
	LoRA string
	// TokenIDs is the prompt when the client sent token ids.
	TokenIDs []uint32
	// Prompt is the text prompt of a completion; Messages the chat.
	Prompt   string
	Messages []Message
	// CacheSalt is vLLM's per-request (per-tenant) cache salt.
	CacheSalt string
	// RouteTemplate and RouteStep identify a looped/router transformer's
	// route, from the request's extension fields; HasRoute says they are set.
	RouteTemplate string
	RouteStep     uint32
	HasRoute      bool
	// MaxTokens is the requested output length (0 when unset).
	MaxTokens int
	// Stream is true for a server-sent-events response.
	Stream bool
	// Header are the request's HTTP headers (session keys, overrides).
	Header http.Header
	// Overrides are per-request routing overrides (from headers).
	Overrides Overrides
}

// Overrides are per-request changes to the profile's parameters; nil
// fields keep the profile's value.
type Overrides struct {
	// OverlapWeight replaces the kv-cost scorer's overlap weight.
	OverlapWeight *float64
	// Temperature replaces the picker's softmax temperature.
	Temperature *float64
}
