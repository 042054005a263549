package openai

import "encoding/json"

// Usage is the token accounting of a response.
type Usage struct {
	// PromptTokens is the number of prompt tokens.
	PromptTokens int `json:"prompt_tokens"`
	// CompletionTokens is the number of generated tokens.
	CompletionTokens int `json:"completion_tokens"`
	// TotalTokens is their sum.
	TotalTokens int `json:"total_tokens"`
	// PromptTokensDetails breaks the prompt tokens down; vLLM sends it
	// (with cached_tokens) when prefix caching hit and the server was asked
	// to report it.
	PromptTokensDetails *PromptTokensDetails `json:"prompt_tokens_details,omitempty"`
}

// PromptTokensDetails is the breakdown of the prompt tokens.
type PromptTokensDetails struct {
	// CachedTokens is the number of prompt tokens served from the prefix
	// cache: the realised cache hit.
	CachedTokens int `json:"cached_tokens"`
}

// Cached returns the cached prompt tokens, 0 when not reported.
func (u *Usage) Cached() int {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

// Response is a non-streamed completion or chat completion response, typed
// as far as a router reads it. Choices stay raw.
type Response struct {
	// ID is the response id ("cmpl-...", "chatcmpl-...").
	ID string `json:"id"`
	// Object is "text_completion" or "chat.completion".
	Object string `json:"object"`
	// Created is the Unix time of creation.
	Created int64 `json:"created"`
	// Model is the model that served the request.
	Model string `json:"model"`
	// Choices are the generated choices, untouched.
	Choices json.RawMessage `json:"choices"`
	// Usage is the token accounting.
	Usage *Usage `json:"usage,omitempty"`
	// KVTransferParams is vLLM's kv_transfer_params: on a prefill leg, what
	// the decode leg needs to pull the KV cache.
	KVTransferParams json.RawMessage `json:"kv_transfer_params,omitempty"`
}

// StreamChunk is one server-sent event's data of a streamed response
// ("text_completion" or "chat.completion.chunk"). The stream ends with the
// event "data: [DONE]".
type StreamChunk struct {
	// ID is the response id, the same in every chunk.
	ID string `json:"id"`
	// Object is "text_completion" or "chat.completion.chunk".
	Object string `json:"object"`
	// Created is the Unix time of creation.
	Created int64 `json:"created"`
	// Model is the model that serves the request.
	Model string `json:"model"`
	// Choices are the chunk's deltas, untouched.
	Choices json.RawMessage `json:"choices"`
	// Usage is present in the last chunk when stream_options.include_usage
	// was set (and in every chunk with vLLM's continuous_usage_stats).
	Usage *Usage `json:"usage,omitempty"`
}

// StreamDone is the data of the event that ends a stream.
const StreamDone = "[DONE]"

// Model is one entry of GET /v1/models, as vLLM serves it.
type Model struct {
	// ID is the model name (or a LoRA adapter's name).
	ID string `json:"id"`
	// Object is "model".
	Object string `json:"object"`
	// Created is the Unix time the model was loaded.
	Created int64 `json:"created"`
	// OwnedBy is the owner ("vllm").
	OwnedBy string `json:"owned_by"`
	// Root is the base model path (vLLM).
	Root string `json:"root,omitempty"`
	// Parent is the base model of a LoRA adapter, null for a base model
	// (vLLM).
	Parent *string `json:"parent,omitempty"`
	// MaxModelLen is the context length (vLLM).
	MaxModelLen int `json:"max_model_len,omitempty"`
}

// ModelList is the response of GET /v1/models.
type ModelList struct {
	// Object is "list".
	Object string `json:"object"`
	// Data are the models.
	Data []Model `json:"data"`
}
