package tokenizer

import (
	"context"
	"errors"
)

// Tokenizer turns text or chat messages into token ids.
//
// Implementations are safe for concurrent use. Both methods append the ids
// to dst (which may be nil) and return the extended slice; the caller owns
// it. The in-process tokenizer never blocks and ignores ctx; the remote one
// makes an HTTP request bounded by ctx and its own timeout.
type Tokenizer interface {
	// Encode tokenizes a completion prompt. With addSpecial the model's
	// post-processor adds its special tokens (usually BOS), as the engine
	// does for the OpenAI `prompt` field.
	Encode(ctx context.Context, text string, addSpecial bool, dst []uint32) ([]uint32, error)
	// EncodeChat renders messages with the model's chat template, including
	// the generation prompt for the assistant's turn, and tokenizes the
	// result without adding special tokens again (the template holds them),
	// as the engine does for the OpenAI `messages` field.
	EncodeChat(ctx context.Context, messages []Message, dst []uint32) ([]uint32, error)
}

// Message is one chat message with plain text content. Callers flatten
// OpenAI content-part arrays into Content (text parts concatenated) first.
type Message struct {
	// Role is "system", "user", "assistant" or "tool".
	Role string `json:"role"`
	// Content is the message's text.
	Content string `json:"content"`
}

// Errors returned by this package; match them with errors.Is.
var (
	// ErrUnsupported reports a tokenizer.json component this package cannot
	// reproduce exactly. Use the Remote tokenizer for such models.
	ErrUnsupported = errors.New("tokenizer: unsupported")
	// ErrInvalid reports a malformed tokenizer.json.
	ErrInvalid = errors.New("tokenizer: invalid tokenizer.json")
	// ErrNoChatTemplate reports EncodeChat on a tokenizer without a template.
	ErrNoChatTemplate = errors.New("tokenizer: no chat template configured")
	// ErrRemote reports a failed or malformed /tokenize call.
	ErrRemote = errors.New("tokenizer: remote /tokenize failed")
)
