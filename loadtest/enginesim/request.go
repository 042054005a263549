package enginesim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/cellrouter/cellrouter/api/openai"
)

// apiError is a client error with the status and OpenAI error body fields
// to answer it with.
type apiError struct {
	status int
	typ    string
	param  string
	msg    string
}

// write answers the request with e's OpenAI error body.
func (e *apiError) write(w http.ResponseWriter) {
	openai.WriteErrorBody(w, e.status, openai.NewErrorBody(e.typ, e.msg, e.param, ""))
}

// badRequest returns a 400 invalid_request_error.
func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: openai.TypeInvalidRequest, param: param, msg: "enginesim: " + fmt.Sprintf(format, args...)}
}

// modelNotFound returns vLLM's 404 for an unknown model.
func modelNotFound(model string) *apiError {
	return &apiError{status: http.StatusNotFound, typ: "NotFoundError", param: "model", msg: "The model `" + model + "` does not exist."}
}

// kvParams is the part of vLLM's kv_transfer_params (NixlConnector) the
// simulator reads. Absent and null fields are zero.
type kvParams struct {
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	RemoteBlockIDs  []int64 `json:"remote_block_ids"`
	RemoteEngineID  string  `json:"remote_engine_id"`
	RemoteHost      string  `json:"remote_host"`
	RemotePort      int     `json:"remote_port"`
}

// bodyExtras are the vLLM request fields ParseRequest does not type.
type bodyExtras struct {
	AddSpecialTokens    *bool `json:"add_special_tokens"`
	AddGenerationPrompt *bool `json:"add_generation_prompt"`
}

// genRequest is a parsed, validated generation request.
type genRequest struct {
	kind         openai.Kind
	stream       bool
	includeUsage bool
	maxTokens    int      // output tokens to generate
	tokens       []uint32 // the prompt's token ids
	salt         string   // cache_salt: partitions the prefix cache
	lora         string   // the LoRA adapter the request names as its model ("" for the base model)
	kv           kvParams
}

// prefillOnly reports whether the request is the prefill leg of a
// disaggregated request.
func (g *genRequest) prefillOnly() bool { return g.kv.DoRemoteDecode }

// remotePrefill reports whether the request is the decode leg.
func (g *genRequest) remotePrefill() bool { return g.kv.DoRemotePrefill }

// parseGenerate parses and validates a generation request body.
func (p *Pod) parseGenerate(kind openai.Kind, body []byte) (*genRequest, *apiError) {
	req, err := openai.ParseRequest(kind, body)
	if err != nil {
		var re *openai.RequestError
		if errors.As(err, &re) {
			return nil, &apiError{status: re.Status(), typ: openai.TypeInvalidRequest, param: re.Param, msg: re.Error()}
		}
		return nil, badRequest("", "%v", err)
	}
	lora := ""
	if req.Model != "" && req.Model != p.cfg.Model {
		if !slices.Contains(p.cfg.LoRAAdapters, req.Model) {
			return nil, modelNotFound(req.Model)
		}
		lora = req.Model
	}
	var ex bodyExtras
	if bytes.Contains(body, []byte(`"add_`)) {
		if err := json.Unmarshal(body, &ex); err != nil {
			return nil, badRequest("", "add_special_tokens and add_generation_prompt must be booleans: %v", err)
		}
	}
	g := &genRequest{kind: kind, stream: req.Stream, includeUsage: req.IncludeUsage, salt: req.CacheSalt, lora: lora}
	if req.KVTransferParams != nil {
		if err := json.Unmarshal(req.KVTransferParams, &g.kv); err != nil {
			return nil, badRequest("kv_transfer_params", "does not decode: %v", err)
		}
		switch {
		case g.kv.DoRemoteDecode && g.kv.DoRemotePrefill:
			return nil, badRequest("kv_transfer_params", "do_remote_decode and do_remote_prefill are both true")
		case g.kv.DoRemoteDecode && p.cfg.Role == RoleDecode:
			return nil, badRequest("kv_transfer_params", "do_remote_decode sent to a decode-only pod")
		case g.kv.DoRemotePrefill && p.cfg.Role == RolePrefill:
			return nil, badRequest("kv_transfer_params", "do_remote_prefill sent to a prefill-only pod")
		}
	}
	switch kind {
	case openai.KindCompletion:
		if req.Prompt.Count > 1 {
			return nil, badRequest("prompt", "batched prompts (%d) are not supported; send one prompt per request", req.Prompt.Count)
		}
		if req.Prompt.IsTokens() {
			g.tokens = req.Prompt.Tokens
		} else {
			addSpecial := ex.AddSpecialTokens == nil || *ex.AddSpecialTokens
			g.tokens = p.tok.Encode(req.Prompt.Text, addSpecial, nil)
		}
	case openai.KindChat:
		gen := ex.AddGenerationPrompt == nil || *ex.AddGenerationPrompt
		addSpecial := ex.AddSpecialTokens != nil && *ex.AddSpecialTokens
		toks, err := p.tok.EncodeChat(req.Messages, gen, addSpecial, nil)
		if err != nil {
			return nil, badRequest("messages", "%v", err)
		}
		g.tokens = toks
	}
	if len(g.tokens) == 0 {
		return nil, badRequest("prompt", "the prompt is empty")
	}
	for _, id := range g.tokens {
		if int64(id) >= int64(p.cfg.Vocab) {
			return nil, badRequest("prompt", "token id %d is out of vocabulary (size %d)", id, p.cfg.Vocab)
		}
	}
	switch {
	case req.MaxTokens == 0:
		return nil, badRequest("max_tokens", "must be at least 1, got 0")
	case req.MaxTokens < 0:
		g.maxTokens = p.cfg.DefaultMaxTokens
	default:
		g.maxTokens = req.MaxTokens
	}
	if g.prefillOnly() {
		g.maxTokens = 1
	}
	if total := int64(len(g.tokens)) + int64(g.maxTokens); total > int64(p.cfg.MaxModelLen) {
		return nil, badRequest("max_tokens", "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			p.cfg.MaxModelLen, total, len(g.tokens), g.maxTokens)
	}
	return g, nil
}
