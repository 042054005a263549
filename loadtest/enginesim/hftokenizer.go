package enginesim

import (
	"fmt"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
)

// TextTokenizer tokenizes a pod's text prompts and chats. Implementations
// are safe for concurrent use; both methods append to dst and return the
// extended slice.
type TextTokenizer interface {
	// Encode tokenizes a completion prompt, after the model's special
	// tokens when addSpecial is true.
	Encode(text string, addSpecial bool, dst []uint32) []uint32
	// EncodeChat renders messages with the chat template (with the
	// assistant's generation prompt when addGenerationPrompt is true) and
	// tokenizes the result, adding special tokens again only when
	// addSpecial is true, as vLLM does.
	EncodeChat(messages []openai.Message, addGenerationPrompt, addSpecial bool, dst []uint32) ([]uint32, error)
}

// wordTokenizer is the default TextTokenizer: the word hasher.
type wordTokenizer struct{ Tokenizer }

func (w wordTokenizer) EncodeChat(messages []openai.Message, gen, addSpecial bool, dst []uint32) ([]uint32, error) {
	return w.Tokenizer.EncodeChat(messages, gen, addSpecial, dst), nil
}

// HFTokenizer is a TextTokenizer over a Hugging Face tokenizer.json (the
// in-process BPE of package cachekey/tokenizer) and one of its built-in chat
// templates. Pods configured with it tokenize exactly as cells
// (routing.tokenizer_json, routing.chat_template) and the global tier
// (--tokenizer) configured with the same file and template, so the blocks
// the pods cache are the blocks the routers hash.
type HFTokenizer struct {
	// BPE is the tokenizer; Template renders chats.
	BPE      *tokenizer.BPE
	Template tokenizer.ChatTemplate
}

var _ TextTokenizer = (*HFTokenizer)(nil)

// LoadHFTokenizer loads a tokenizer.json and names its chat template.
func LoadHFTokenizer(path, template string) (*HFTokenizer, error) {
	tmpl, err := tokenizer.ChatTemplateByName(template)
	if err != nil {
		return nil, fmt.Errorf("enginesim: %w", err)
	}
	bpe, err := tokenizer.LoadFile(path, tokenizer.Options{})
	if err != nil {
		return nil, fmt.Errorf("enginesim: %w", err)
	}
	return &HFTokenizer{BPE: bpe, Template: tmpl}, nil
}

// Encode implements TextTokenizer.
func (h *HFTokenizer) Encode(text string, addSpecial bool, dst []uint32) []uint32 {
	return h.BPE.EncodeString(text, addSpecial, dst)
}

// EncodeChat implements TextTokenizer. Messages carry their text content
// only (content parts joined), as the routers see them.
func (h *HFTokenizer) EncodeChat(messages []openai.Message, gen, addSpecial bool, dst []uint32) ([]uint32, error) {
	msgs := make([]tokenizer.Message, len(messages))
	for i, m := range messages {
		msgs[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	text, err := h.Template.Render(msgs, gen)
	if err != nil {
		return dst, fmt.Errorf("enginesim: %w", err)
	}
	return h.BPE.EncodeString(text, addSpecial, dst), nil
}
