package enginesim

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/cellrouter/cellrouter/api/openai"
)

// tokenizeRequest is vLLM's POST /tokenize body: a prompt, or chat
// messages rendered with the chat template.
type tokenizeRequest struct {
	Model               string          `json:"model"`
	Prompt              *string         `json:"prompt"`
	Messages            json.RawMessage `json:"messages"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
}

// tokenizeResponse is vLLM's /tokenize answer.
type tokenizeResponse struct {
	Count       int             `json:"count"`
	MaxModelLen int             `json:"max_model_len"`
	Tokens      []uint32        `json:"tokens"`
	TokenStrs   json.RawMessage `json:"token_strs"`
}

// serveTokenize serves POST /tokenize with the same tokenizer and template
// as the completion endpoints: add_special_tokens defaults to true for a
// prompt and to false for messages, add_generation_prompt to true, as in
// vLLM.
func (p *Pod) serveTokenize(w http.ResponseWriter, r *http.Request) {
	data, err := openai.ReadBody(w, r, p.cfg.MaxBodyBytes)
	if err != nil {
		openai.WriteRequestError(w, err)
		return
	}
	ids, aerr := p.tokenize(data)
	if aerr != nil {
		aerr.write(w)
		return
	}
	out, _ := json.Marshal(tokenizeResponse{Count: len(ids), MaxModelLen: p.cfg.MaxModelLen, Tokens: ids, TokenStrs: jsonNull})
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// tokenize decodes a /tokenize body and returns its token ids.
func (p *Pod) tokenize(data []byte) ([]uint32, *apiError) {
	var req tokenizeRequest
	if err := json.Unmarshal(data, &req); err != nil {
		return nil, badRequest("", "body does not decode: %v", err)
	}
	if req.Model != "" && req.Model != p.cfg.Model {
		return nil, modelNotFound(req.Model)
	}
	hasMsgs := len(req.Messages) > 0 && string(req.Messages) != "null"
	switch {
	case req.Prompt != nil && hasMsgs:
		return nil, badRequest("", "give either prompt or messages, not both")
	case req.Prompt != nil:
		addSpecial := req.AddSpecialTokens == nil || *req.AddSpecialTokens
		ids := p.tok.Encode(*req.Prompt, addSpecial, []uint32{})
		return ids, nil
	case hasMsgs:
		// Reuse the chat request parser for the messages' shapes.
		wrapped := make([]byte, 0, len(req.Messages)+16)
		wrapped = append(wrapped, `{"messages":`...)
		wrapped = append(wrapped, req.Messages...)
		wrapped = append(wrapped, '}')
		chat, err := openai.ParseChat(wrapped)
		if err != nil {
			var re *openai.RequestError
			if errors.As(err, &re) {
				return nil, badRequest(re.Param, "%s", re.Msg)
			}
			return nil, badRequest("messages", "%v", err)
		}
		gen := req.AddGenerationPrompt == nil || *req.AddGenerationPrompt
		addSpecial := req.AddSpecialTokens != nil && *req.AddSpecialTokens
		ids, err := p.tok.EncodeChat(chat.Messages, gen, addSpecial, []uint32{})
		if err != nil {
			return nil, badRequest("messages", "%v", err)
		}
		return ids, nil
	}
	return nil, badRequest("prompt", "give prompt or messages")
}

// serveModels serves GET /v1/models: the one served model.
func (p *Pod) serveModels(w http.ResponseWriter) {
	list := openai.ModelList{Object: "list", Data: []openai.Model{{
		ID: p.cfg.Model, Object: "model", Created: p.created, OwnedBy: "enginesim", Root: p.cfg.Model, MaxModelLen: p.cfg.MaxModelLen,
	}}}
	for _, a := range p.cfg.LoRAAdapters {
		parent := p.cfg.Model
		list.Data = append(list.Data, openai.Model{ID: a, Object: "model", Created: p.created, OwnedBy: "enginesim", Root: a, Parent: &parent, MaxModelLen: p.cfg.MaxModelLen})
	}
	out, _ := json.Marshal(list)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}
