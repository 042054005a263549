package overhead

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
)

// The prompt kinds a measurement sends (Config.Prompt).
const (
	// PromptTokens is a token-array completion prompt.
	PromptTokens = "tokens"
	// PromptText is a text completion prompt, which the routers tokenize.
	PromptText = "text"
	// PromptChat is a chat (a long system message and a short question),
	// which the routers render with the chat template and tokenize.
	PromptChat = "chat"
)

// promptKinds lists the kinds in report order.
var promptKinds = []string{PromptTokens, PromptText, PromptChat}

// model is the model every request names.
const model = "m"

// paragraph is the text prompts are made of: ordinary English, which the
// demo tokenizer's merges cover about as well as a real vocabulary covers
// any text (its 660 ids make a token about 3.5 bytes).
const paragraph = "The router reads the prompt, turns it into tokens and hashes the tokens block by block. " +
	"A pod that already holds the longest prefix of those blocks in its cache can skip most of the prefill, " +
	"so the request should go there, unless that pod is already too busy. "

// prompts builds every request of a run. Request i of each kind shares a
// long prefix with the others (about PromptTokens tokens: a text, a system
// message, or token ids) and ends with its own few tokens, as requests of
// one application do: a cache of whole prompts never hits, a router that
// matches prefixes does.
type prompts struct {
	tokens int
	// prefixIDs are the token ids of each kind's shared prefix under the
	// demo tokenizer, for the pod that holds it.
	prefixIDs map[string][]uint32
	prefix    string
}

func newPrompts(tok *tokenizer.BPE, tmpl tokenizer.ChatTemplate, n int) *prompts {
	var b strings.Builder
	for i := 1; len(tok.EncodeString(b.String(), true, nil)) < n; i++ {
		b.WriteString(paragraph)
		b.WriteString("Section " + strconv.Itoa(i) + ". ")
	}
	p := &prompts{tokens: n, prefix: b.String(), prefixIDs: map[string][]uint32{}}
	for _, id := range p.tokenIDs(0)[:n-8] {
		p.prefixIDs[PromptTokens] = append(p.prefixIDs[PromptTokens], uint32(id))
	}
	p.prefixIDs[PromptText] = tok.EncodeString(p.prefix, true, nil)
	sys, _ := tmpl.Render([]tokenizer.Message{{Role: "system", Content: p.prefix}}, false)
	p.prefixIDs[PromptChat] = tok.EncodeString(sys, false, nil)
	return p
}

// tokenIDs is request i's token prompt: n ids, the last 8 its own.
func (p *prompts) tokenIDs(i int) []int {
	out := make([]int, p.tokens)
	for k := range out {
		out[k] = 300 + k%300
	}
	for k := p.tokens - 8; k < p.tokens; k++ {
		out[k] = 300 + (i*8+k)%300
	}
	return out
}

// body returns request i's JSON body of the kind, and the API path.
func (p *prompts) body(kind string, i, maxTokens int, stream bool) (path string, body []byte) {
	req := map[string]any{"model": model, "max_tokens": maxTokens, "stream": stream}
	path = "/v1/completions"
	switch kind {
	case PromptTokens:
		req["prompt"] = p.tokenIDs(i)
	case PromptText:
		req["prompt"] = p.prefix + fmt.Sprintf("Request %d asks where it should go.", i)
	case PromptChat:
		path = "/v1/chat/completions"
		req["messages"] = []map[string]string{{"role": "system", "content": p.prefix},
			{"role": "user", "content": fmt.Sprintf("Request %d asks where it should go.", i)}}
	}
	body, _ = json.Marshal(req)
	return path, body
}
