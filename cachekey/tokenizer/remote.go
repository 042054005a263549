package tokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Remote is a Tokenizer that asks the engine: vLLM's `POST /tokenize`,
// which applies the model's own tokenizer and, for messages, its real chat
// template. It costs a round trip per request, so the cell uses it only for
// models the in-process BPE cannot load or whose template is not built in.
// Remote is safe for concurrent use.
type Remote struct {
	// BaseURL is the engine's address, such as http://10.0.0.7:8000;
	// "/tokenize" is appended.
	BaseURL string
	// Model is the served model name sent in each request.
	Model string
	// Client sends the requests; nil means http.DefaultClient.
	Client *http.Client
	// Timeout bounds each call on top of the caller's context; zero means
	// no extra bound.
	Timeout time.Duration
}

var _ Tokenizer = (*Remote)(nil)

// tokenizeRequest is the body of vLLM's /tokenize: either Prompt or
// Messages is set.
type tokenizeRequest struct {
	Model               string    `json:"model,omitempty"`
	Prompt              *string   `json:"prompt,omitempty"`
	Messages            []Message `json:"messages,omitempty"`
	AddSpecialTokens    bool      `json:"add_special_tokens"`
	AddGenerationPrompt *bool     `json:"add_generation_prompt,omitempty"`
}

// tokenizeResponse is vLLM's /tokenize answer.
type tokenizeResponse struct {
	Tokens      []int64 `json:"tokens"`
	Count       *int    `json:"count"`
	MaxModelLen int     `json:"max_model_len"`
}

// maxResponse bounds the response body read: ids of a very long prompt
// fit easily.
const maxResponse = 64 << 20

// Encode implements Tokenizer with a /tokenize call for a prompt.
func (r *Remote) Encode(ctx context.Context, text string, addSpecial bool, dst []uint32) ([]uint32, error) {
	return r.call(ctx, tokenizeRequest{Model: r.Model, Prompt: &text, AddSpecialTokens: addSpecial}, dst)
}

// EncodeChat implements Tokenizer with a /tokenize call for messages, with
// the generation prompt and without extra special tokens (the template
// holds them), as vLLM's chat completions do.
func (r *Remote) EncodeChat(ctx context.Context, messages []Message, dst []uint32) ([]uint32, error) {
	gen := true
	if messages == nil {
		messages = []Message{}
	}
	return r.call(ctx, tokenizeRequest{Model: r.Model, Messages: messages, AddGenerationPrompt: &gen}, dst)
}

// call posts req and appends the returned ids to dst.
func (r *Remote) call(ctx context.Context, req tokenizeRequest, dst []uint32) ([]uint32, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	body, err := json.Marshal(req)
	if err != nil {
		return dst, fmt.Errorf("%w: encode request: %v", ErrRemote, err)
	}
	url := strings.TrimSuffix(r.BaseURL, "/") + "/tokenize"
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return dst, fmt.Errorf("%w: %v", ErrRemote, err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	client := r.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return dst, fmt.Errorf("%w: POST %s: %w", ErrRemote, url, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return dst, fmt.Errorf("%w: POST %s: read body: %w", ErrRemote, url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return dst, &StatusError{URL: url, Status: resp.StatusCode, Body: data[:min(len(data), maxErrorBody)]}
	}
	if len(data) > maxResponse {
		return dst, fmt.Errorf("%w: POST %s: response larger than %d bytes", ErrRemote, url, maxResponse)
	}
	return decodeTokenizeResponse(data, dst)
}

// maxErrorBody bounds the error answer a StatusError keeps.
const maxErrorBody = 64 << 10

// StatusError is the error of a /tokenize call the engine answered with a
// status other than 200. It matches ErrRemote under errors.Is. The engine's
// answer is kept so that a router can relay the engine's own reason (an
// unknown model, a prompt longer than the context) to its client.
type StatusError struct {
	// URL is the /tokenize URL that was called.
	URL string
	// Status is the engine's HTTP status.
	Status int
	// Body is the start of the engine's answer (at most 64 KiB).
	Body []byte
}

// Error returns "tokenizer: remote /tokenize failed: POST URL: status N: BODY".
func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: POST %s: status %d: %s", ErrRemote, e.URL, e.Status, snippet(e.Body))
}

// Unwrap returns ErrRemote.
func (e *StatusError) Unwrap() error { return ErrRemote }

// decodeTokenizeResponse appends the ids of a /tokenize response body to
// dst, checking that they are token ids and agree with "count".
func decodeTokenizeResponse(data []byte, dst []uint32) ([]uint32, error) {
	var out tokenizeResponse
	if err := json.Unmarshal(data, &out); err != nil {
		return dst, fmt.Errorf("%w: bad response %s: %v", ErrRemote, snippet(data), err)
	}
	if out.Tokens == nil {
		return dst, fmt.Errorf("%w: response has no tokens: %s", ErrRemote, snippet(data))
	}
	if out.Count != nil && *out.Count != len(out.Tokens) {
		return dst, fmt.Errorf("%w: response count %d but %d tokens", ErrRemote, *out.Count, len(out.Tokens))
	}
	start := len(dst)
	for _, id := range out.Tokens {
		if id < 0 || id > 1<<32-1 {
			return dst[:start], fmt.Errorf("%w: token id %d out of range", ErrRemote, id)
		}
		dst = append(dst, uint32(id))
	}
	return dst, nil
}

// snippet returns the start of a body for an error message.
func snippet(b []byte) string {
	const n = 200
	if len(b) > n {
		return fmt.Sprintf("%q...", b[:n])
	}
	return fmt.Sprintf("%q", b)
}
