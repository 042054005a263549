package openai

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// ErrPromptTooLong matches a *PromptTooLongError.
var ErrPromptTooLong = errors.New("openai: prompt too long")

// CodeContextLength is OpenAI's error code for a prompt longer than the
// model's context (400, type invalid_request_error).
const CodeContextLength = "context_length_exceeded"

// PromptLimit bounds one model's prompt as a router sees it: its text
// before it is tokenized, so that a huge prompt costs no tokenizer time,
// and its tokens (given as ids, or after tokenizing).
type PromptLimit struct {
	// MaxBytes bounds the prompt's text in bytes: a completion's prompt
	// string, or the contents of a chat's messages together. 0 takes the
	// default's (PromptLimits.MaxBytes).
	MaxBytes int64 `yaml:"max_bytes" json:"max_bytes"`
	// MaxTokens bounds the prompt's tokens. 0 takes the default's.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
}

// PromptLimits are the prompt limits of every model: a default, and the
// models that differ. A request whose prompt exceeds its model's limit is
// refused with 400 context_length_exceeded, as OpenAI refuses a prompt
// longer than the model's context.
type PromptLimits struct {
	// MaxBytes bounds a prompt's text in bytes (see PromptLimit); 0 is
	// unlimited.
	MaxBytes int64 `yaml:"max_bytes" json:"max_bytes"`
	// MaxTokens bounds a prompt's tokens; 0 is unlimited.
	MaxTokens int `yaml:"max_tokens" json:"max_tokens"`
	// Models are the limits of models that differ from the default; a zero
	// field takes the default's.
	Models map[string]PromptLimit `yaml:"models" json:"models"`
}

// DefaultPromptLimits allows 4 MiB of text and 1,048,576 tokens (a
// million-token context, about 4 MB of English), for every model.
func DefaultPromptLimits() PromptLimits {
	return PromptLimits{MaxBytes: 4 << 20, MaxTokens: 1 << 20}
}

// Validate reports the first negative limit, named with prefix (the
// configuration section, such as "routing.prompt_limits").
func (l PromptLimits) Validate(prefix string) error {
	if l.MaxBytes < 0 {
		return fmt.Errorf("%s.max_bytes = %d: must not be negative", prefix, l.MaxBytes)
	}
	if l.MaxTokens < 0 {
		return fmt.Errorf("%s.max_tokens = %d: must not be negative", prefix, l.MaxTokens)
	}
	for m, ml := range l.Models {
		if ml.MaxBytes < 0 || ml.MaxTokens < 0 {
			return fmt.Errorf("%s.models[%q] = {max_bytes: %d, max_tokens: %d}: must not be negative", prefix, m, ml.MaxBytes, ml.MaxTokens)
		}
	}
	return nil
}

// For returns model's limit, the default's filling its zero fields.
func (l PromptLimits) For(model string) PromptLimit {
	out := PromptLimit{MaxBytes: l.MaxBytes, MaxTokens: l.MaxTokens}
	if ml, ok := l.Models[model]; ok {
		if ml.MaxBytes > 0 {
			out.MaxBytes = ml.MaxBytes
		}
		if ml.MaxTokens > 0 {
			out.MaxTokens = ml.MaxTokens
		}
	}
	return out
}

// PromptTooLongError is a prompt over its model's PromptLimit.
type PromptTooLongError struct {
	// Param is "prompt" or "messages".
	Param string
	// Tokens says the limit is on tokens (else on bytes of text).
	Tokens bool
	// Limit and Got are the limit and the prompt's size.
	Limit, Got int64
}

// Error says which limit the prompt exceeded, in OpenAI's words.
func (e *PromptTooLongError) Error() string {
	if e.Tokens {
		return "This model's maximum context length is " + strconv.FormatInt(e.Limit, 10) + " tokens. However, your " +
			e.what() + " resulted in " + strconv.FormatInt(e.Got, 10) + " tokens. Please reduce the length of the " + e.what() + "."
	}
	verb := " has "
	if e.Param == "messages" {
		verb = " have "
	}
	return "This router accepts at most " + strconv.FormatInt(e.Limit, 10) + " bytes of prompt text for this model. However, your " +
		e.what() + verb + strconv.FormatInt(e.Got, 10) + " bytes. Please reduce the length of the " + e.what() + "."
}

func (e *PromptTooLongError) what() string {
	if e.Param == "messages" {
		return "messages"
	}
	return "prompt"
}

// Unwrap returns ErrPromptTooLong.
func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }

// Write answers the error: 400, invalid_request_error,
// context_length_exceeded, with the param.
func (e *PromptTooLongError) Write(w http.ResponseWriter) {
	WriteErrorBody(w, http.StatusBadRequest, NewErrorBody(TypeInvalidRequest, e.Error(), e.Param, CodeContextLength))
}

// promptParam is the prompt parameter of a chat or a completion.
func promptParam(chat bool) string {
	if chat {
		return "messages"
	}
	return "prompt"
}

// CheckText checks req's prompt text (nothing for a prompt of token ids,
// whose length CheckTokens checks) against MaxBytes, without tokenizing
// it; it returns a *PromptTooLongError or nil. A chat counts the bytes of
// its messages' contents together.
func (l PromptLimit) CheckText(req *Request) error {
	if l.MaxBytes <= 0 {
		return nil
	}
	var n int64
	if req.Kind == KindChat {
		for i := range req.Messages {
			n += int64(len(req.Messages[i].Content))
		}
	} else if !req.Prompt.IsTokens() {
		n = int64(len(req.Prompt.Text))
	}
	if n > l.MaxBytes {
		return &PromptTooLongError{Param: promptParam(req.Kind == KindChat), Limit: l.MaxBytes, Got: n}
	}
	return nil
}

// CheckTokens checks a prompt (a chat's when chat) of n tokens against
// MaxTokens; it returns a *PromptTooLongError or nil.
func (l PromptLimit) CheckTokens(chat bool, n int) error {
	if l.MaxTokens > 0 && n > l.MaxTokens {
		return &PromptTooLongError{Param: promptParam(chat), Tokens: true, Limit: int64(l.MaxTokens), Got: int64(n)}
	}
	return nil
}
