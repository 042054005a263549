package global

import (
	"fmt"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
)

// ModelTokenizer says how the global tier tokenizes one model's text
// prompts and chats in process. It must name the same tokenizer.json and
// chat template as the cells serving the model (routing.tokenizer_json and
// routing.chat_template), or the global block hashes differ from theirs
// and every request of the model looks cold.
type ModelTokenizer struct {
	// Model is the model name requests carry (their "model" field).
	Model string `yaml:"model" json:"model"`
	// File is the model's Hugging Face tokenizer.json.
	File string `yaml:"tokenizer_json" json:"tokenizer_json"`
	// ChatTemplate names a built-in chat template (see
	// tokenizer.ChatTemplateNames); "" sends the model's chats to a cell's
	// /tokenize, which applies the model's own template.
	ChatTemplate string `yaml:"chat_template" json:"chat_template"`
}

// TokenizeConfig says how the global tier turns text prompts and chats
// into the token ids its summaries are searched with.
type TokenizeConfig struct {
	// Models are the in-process tokenizers, by model.
	Models []ModelTokenizer `yaml:"models" json:"models"`
	// Remote asks a cell's POST /tokenize for what no in-process tokenizer
	// covers (a model without a file, a chat without a template, a message
	// the built-in template refuses); false routes those requests cold.
	Remote bool `yaml:"remote" json:"remote"`
	// RemoteTimeout bounds one remote call; a request whose call fails or
	// times out goes the cold path.
	RemoteTimeout time.Duration `yaml:"remote_timeout" json:"remote_timeout"`
	// CacheBytes bounds the memory of the tokenization cache: the segments
	// (about one chat message each) the in-process tokenizers encoded and
	// the answers of remote calls. 0 disables it.
	CacheBytes int64 `yaml:"cache_bytes" json:"cache_bytes"`
}

// DefaultTokenizeConfig asks the cells for every model (no file is
// configured), within 250 ms, and caches up to 64 MiB of token ids.
func DefaultTokenizeConfig() TokenizeConfig {
	return TokenizeConfig{Remote: true, RemoteTimeout: 250 * time.Millisecond, CacheBytes: 64 << 20}
}

// Validate reports the first invalid field with its value.
func (c TokenizeConfig) Validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: tokenize.%s = %v: %s", ErrInvalidConfig, field, v, why)
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		f := fmt.Sprintf("models[%d]", i)
		switch {
		case m.Model == "":
			return bad(f+".model", `""`, "is required")
		case seen[m.Model]:
			return bad(f+".model", fmt.Sprintf("%q", m.Model), "is listed twice")
		case m.File == "":
			return bad(f+".tokenizer_json", `""`, "is required")
		}
		if m.ChatTemplate != "" {
			if _, err := tokenizer.ChatTemplateByName(m.ChatTemplate); err != nil {
				return bad(f+".chat_template", fmt.Sprintf("%q", m.ChatTemplate), err.Error())
			}
		}
		seen[m.Model] = true
	}
	switch {
	case c.Remote && c.RemoteTimeout <= 0:
		return bad("remote_timeout", c.RemoteTimeout, "must be positive")
	case c.CacheBytes < 0:
		return bad("cache_bytes", c.CacheBytes, "must not be negative")
	}
	return nil
}

// ParseModelTokenizer parses globald's --tokenizer flag value
// MODEL=PATH[,TEMPLATE]: the model's tokenizer.json and, optionally, its
// built-in chat template.
func ParseModelTokenizer(s string) (ModelTokenizer, error) {
	model, rest, ok := strings.Cut(s, "=")
	if !ok || model == "" || rest == "" {
		return ModelTokenizer{}, fmt.Errorf("%w: tokenizer %q: want MODEL=PATH[,CHAT_TEMPLATE]", ErrInvalidConfig, s)
	}
	m := ModelTokenizer{Model: model, File: rest}
	if i := strings.LastIndexByte(rest, ','); i >= 0 {
		m.File, m.ChatTemplate = rest[:i], rest[i+1:]
	}
	return m, nil
}
