package enginesim

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// finishLength is the finish reason of every answer: the simulator always
// generates max_tokens tokens.
var finishLength = "length"

// completionChoice is a choice of a text completion or of its chunks.
type completionChoice struct {
	Index        int             `json:"index"`
	Text         string          `json:"text"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason"`
}

// chatMessage is a chat answer's message or a chunk's delta.
type chatMessage struct {
	Role    string `json:"role,omitempty"`
	Content string `json:"content"`
}

// chatChoice is a choice of a chat completion (Message) or chunk (Delta).
type chatChoice struct {
	Index        int             `json:"index"`
	Message      *chatMessage    `json:"message,omitempty"`
	Delta        *chatMessage    `json:"delta,omitempty"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
}

// body is a response or a stream chunk.
type body struct {
	ID               string          `json:"id"`
	Object           string          `json:"object"`
	Created          int64           `json:"created"`
	Model            string          `json:"model"`
	Choices          any             `json:"choices"`
	Usage            *openai.Usage   `json:"usage,omitempty"`
	KVTransferParams json.RawMessage `json:"kv_transfer_params,omitempty"`
}

var jsonNull = json.RawMessage("null")

// output writes the answer of one request after its prefill.
type output struct {
	p   *Pod
	g   *genRequest
	pl  prefillPlan
	key uint64 // seeds the generated tokens
	id  string
	now int64
}

// newOutput prepares the answer of g.
func newOutput(p *Pod, g *genRequest, pl prefillPlan) *output {
	last := blockhash.Seed(blockhash.Keys{Model: p.cfg.Model})
	if len(pl.chain) > 0 {
		last = pl.chain[len(pl.chain)-1]
	}
	prefix := "cmpl-"
	if g.kind == openai.KindChat {
		prefix = "chatcmpl-"
	}
	return &output{
		p:   p,
		g:   g,
		pl:  pl,
		key: uint64(blockhash.Mix(last, uint64(len(g.tokens))<<32|uint64(g.tokens[len(g.tokens)-1]))),
		id:  prefix + strconv.FormatUint(p.seq.Add(1), 10) + "-" + strconv.FormatUint(uint64(blockhash.Seed(blockhash.Keys{Model: p.id}))&0xffffff, 16),
		now: time.Now().Unix(),
	}
}

// text returns the text of generated tokens [from, to).
func (o *output) text(from, to int) string {
	b := make([]byte, 0, 8*(to-from))
	for k := from; k < to; k++ {
		b = appendTokenText(b, o.p.words.outputToken(o.key, k))
	}
	return string(b)
}

// usage returns the request's usage.
func (o *output) usage() *openai.Usage {
	n := len(o.g.tokens)
	return &openai.Usage{
		PromptTokens:        n,
		CompletionTokens:    o.g.maxTokens,
		TotalTokens:         n + o.g.maxTokens,
		PromptTokensDetails: &openai.PromptTokensDetails{CachedTokens: o.pl.cached},
	}
}

// object returns the response's object name.
func (o *output) object(chunk bool) string {
	switch {
	case o.g.kind == openai.KindChat && chunk:
		return "chat.completion.chunk"
	case o.g.kind == openai.KindChat:
		return "chat.completion"
	}
	return "text_completion"
}

// choices returns the choices array carrying text; finish says whether it
// is the last; first, for a chat chunk, adds the assistant role.
func (o *output) choices(text string, chunk, finish bool) any {
	var fr *string
	if finish {
		fr = &finishLength
	}
	if o.g.kind == openai.KindCompletion {
		return []completionChoice{{Text: text, Logprobs: jsonNull, FinishReason: fr, StopReason: jsonNull}}
	}
	c := chatChoice{Logprobs: jsonNull, FinishReason: fr}
	if chunk {
		c.Delta = &chatMessage{Content: text}
	} else {
		c.Message = &chatMessage{Role: "assistant", Content: text}
		c.StopReason = jsonNull
	}
	return []chatChoice{c}
}

// kvTransfer returns the kv_transfer_params of a prefill leg's answer (vLLM
// NixlConnector style), nil for other requests.
func (o *output) kvTransfer() json.RawMessage {
	if !o.g.prefillOnly() {
		return nil
	}
	bs := o.p.cfg.BlockSize
	n := len(o.g.tokens)
	ids := make([]int64, 0, (n+bs-1)/bs)
	for i := 0; i*bs < n; i++ {
		h := uint64(blockhash.Mix(blockhash.Hash(o.key), uint64(i)))
		if i < len(o.pl.chain) {
			h = uint64(o.pl.chain[i])
		}
		ids = append(ids, int64(h&(1<<53-1))) // a JSON-safe integer
	}
	v := struct {
		DoRemoteDecode  bool    `json:"do_remote_decode"`
		DoRemotePrefill bool    `json:"do_remote_prefill"`
		RemoteEngineID  string  `json:"remote_engine_id"`
		RemoteBlockIDs  []int64 `json:"remote_block_ids"`
		RemoteHost      string  `json:"remote_host"`
		RemotePort      int     `json:"remote_port"`
		TPSize          int     `json:"tp_size"`
	}{false, true, o.p.id, ids, o.p.host, o.p.port, 1}
	data, _ := json.Marshal(v) // plain types: cannot fail
	return data
}

// respond waits the decode time and writes the whole answer. It returns
// false when ctx ended first.
func (o *output) respond(ctx context.Context, w http.ResponseWriter) bool {
	n := o.g.maxTokens
	if err := o.p.sleep(ctx, time.Duration(n-1)*o.p.cfg.DecodePerToken); err != nil {
		return false
	}
	resp := body{
		ID: o.id, Object: o.object(false), Created: o.now, Model: o.p.cfg.Model,
		Choices:          o.choices(o.text(0, n), false, true),
		Usage:            o.usage(),
		KVTransferParams: o.kvTransfer(),
	}
	data, err := json.Marshal(&resp)
	if err != nil {
		openai.WriteError(w, http.StatusInternalServerError, openai.TypeServer, "enginesim: encode response: "+err.Error())
		return true
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(data)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(data)
	o.p.stats.outputTokens.Add(uint64(n))
	o.p.stats.requests.Add(1)
	return true
}

// stream writes the answer as server-sent events: for chat a first chunk
// with the assistant role, then the first token at once (it comes out of
// the prefill), then TokensPerChunk tokens per chunk after their decode
// time, the last chunk with finish_reason "length", a usage chunk with no
// choices when stream_options.include_usage is set, and "data: [DONE]". It
// returns false when ctx ended or a write failed first.
func (o *output) stream(ctx context.Context, w http.ResponseWriter) bool {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	send := func(c *body) bool {
		data, err := json.Marshal(c)
		if err != nil {
			return false
		}
		buf := make([]byte, 0, len(data)+8)
		buf = append(buf, "data: "...)
		buf = append(buf, data...)
		buf = append(buf, "\n\n"...)
		if _, err := w.Write(buf); err != nil {
			return false
		}
		if flusher != nil {
			flusher.Flush()
		}
		return true
	}
	chunk := func(choices any) *body {
		return &body{ID: o.id, Object: o.object(true), Created: o.now, Model: o.p.cfg.Model, Choices: choices}
	}
	if o.g.kind == openai.KindChat {
		if !send(chunk([]chatChoice{{Delta: &chatMessage{Role: "assistant"}, Logprobs: jsonNull}})) {
			return false
		}
	}
	n := o.g.maxTokens
	for done := 0; done < n; {
		k := 1
		if done > 0 {
			k = min(o.p.cfg.TokensPerChunk, n-done)
			if err := o.p.sleep(ctx, time.Duration(k)*o.p.cfg.DecodePerToken); err != nil {
				return false
			}
		}
		last := done+k == n
		c := chunk(o.choices(o.text(done, done+k), true, last))
		if last {
			c.KVTransferParams = o.kvTransfer()
		}
		if !send(c) {
			return false
		}
		o.p.stats.outputTokens.Add(uint64(k))
		done += k
	}
	if o.g.includeUsage {
		c := chunk([]struct{}{})
		c.Usage = o.usage()
		if !send(c) {
			return false
		}
	}
	if _, err := w.Write([]byte("data: [DONE]\n\n")); err != nil {
		return false
	}
	if flusher != nil {
		flusher.Flush()
	}
	o.p.stats.requests.Add(1)
	return true
}
