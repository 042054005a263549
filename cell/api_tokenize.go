package cell

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// TokenizePath is where the cell serves vLLM's tokenize endpoint. The
// global tier calls it for models it has no tokenizer file for, so that
// its block hashes are the cell's by construction.
const TokenizePath = "/tokenize"

// tokenizeBody is the body of vLLM's POST /tokenize: a prompt, or chat
// messages to render with the model's chat template.
type tokenizeBody struct {
	Model               string          `json:"model"`
	Prompt              *string         `json:"prompt"`
	Messages            json.RawMessage `json:"messages"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
}

// tokenizeAnswer is vLLM's /tokenize answer, without max_model_len (the
// cell does not know the pods' context length) and token_strs.
type tokenizeAnswer struct {
	Count  int      `json:"count"`
	Tokens []uint32 `json:"tokens"`
}

// parseTokenize decodes a /tokenize body into the request the router
// would tokenize: the ids it answers are exactly the ones the cell hashes
// for the same prompt sent to /v1/completions (special tokens added) or
// the same messages sent to /v1/chat/completions (generation prompt
// added). Flags that ask for anything else are refused, since the answer
// would not be what the router routes on.
func parseTokenize(body []byte) (*pipeline.Request, error) {
	var tb tokenizeBody
	if err := json.Unmarshal(body, &tb); err != nil {
		return nil, &openai.RequestError{Msg: "body does not decode: " + err.Error(), Err: openai.ErrInvalidRequest}
	}
	bad := func(param, msg string) error {
		return &openai.RequestError{Param: param, Msg: msg, Err: openai.ErrInvalidRequest}
	}
	hasMsgs := len(tb.Messages) > 0 && string(tb.Messages) != "null"
	switch {
	case tb.Prompt != nil && hasMsgs:
		return nil, bad("", "give either prompt or messages, not both")
	case tb.Prompt != nil:
		if tb.AddSpecialTokens != nil && !*tb.AddSpecialTokens {
			return nil, bad("add_special_tokens", "the cell tokenizes prompts as it routes them, with special tokens")
		}
		if tb.AddGenerationPrompt != nil {
			return nil, bad("add_generation_prompt", "applies to messages only")
		}
		return &pipeline.Request{Model: tb.Model, Prompt: *tb.Prompt}, nil
	case hasMsgs:
		if tb.AddSpecialTokens != nil && *tb.AddSpecialTokens {
			return nil, bad("add_special_tokens", "the cell tokenizes chats as it routes them, without extra special tokens")
		}
		if tb.AddGenerationPrompt != nil && !*tb.AddGenerationPrompt {
			return nil, bad("add_generation_prompt", "the cell tokenizes chats as it routes them, with the generation prompt")
		}
		// The chat parser reads the messages as /v1/chat/completions does
		// (content strings or text parts).
		wrapped := make([]byte, 0, len(tb.Messages)+16)
		wrapped = append(append(append(wrapped, `{"messages":`...), tb.Messages...), '}')
		chat, err := openai.ParseChat(wrapped)
		if err != nil {
			return nil, err
		}
		req := &pipeline.Request{Model: tb.Model, Chat: true, Messages: make([]pipeline.Message, len(chat.Messages))}
		for i, m := range chat.Messages {
			req.Messages[i] = pipeline.Message{Role: m.Role, Content: m.Content}
		}
		return req, nil
	}
	return nil, bad("prompt", "give prompt or messages")
}

// serveTokenize serves POST /tokenize with the router's own tokenizer: the
// in-process one when the cell has a tokenizer file (and chat template),
// else a healthy pod's /tokenize.
func (c *Cell) serveTokenize(w http.ResponseWriter, r *http.Request) {
	body, err := openai.ReadBody(w, r, c.cfg.Routing.MaxBodyBytes)
	if err != nil {
		openai.WriteRequestError(w, err)
		return
	}
	req, err := parseTokenize(body)
	if err != nil {
		openai.WriteRequestError(w, err)
		return
	}
	ids, err := c.tok.Tokenize(r.Context(), req)
	if err != nil {
		// The cause may name a pod's address; it goes to the log, not
		// to the client.
		status, msg := http.StatusBadGateway, "cell: tokenize: no pod could tokenize the request"
		switch {
		case errors.Is(err, errNoTokenizePod):
			status, msg = http.StatusServiceUnavailable, "cell: tokenize: no tokenizer file and no healthy pod"
		case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
			status, msg = http.StatusGatewayTimeout, "cell: tokenize: timed out"
		case errors.Is(err, tokenizer.ErrUnsupportedMessage) || errors.Is(err, tokenizer.ErrNoChatTemplate):
			status, msg = http.StatusBadRequest, "cell: tokenize: "+err.Error()
		}
		c.log.Debug("tokenize failed", "err", err)
		typ := openai.TypeServer
		if status < 500 {
			typ = openai.TypeInvalidRequest
		}
		openai.WriteError(w, status, typ, msg)
		return
	}
	if ids == nil {
		ids = []uint32{}
	}
	out, _ := json.Marshal(tokenizeAnswer{Count: len(ids), Tokens: ids})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
