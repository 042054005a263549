package openai

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

// PromptForm is the JSON shape a completion prompt came in.
type PromptForm uint8

// The prompt forms.
const (
	// PromptText is a string.
	PromptText PromptForm = iota + 1
	// PromptTexts is an array of strings (a batch).
	PromptTexts
	// PromptTokens is an array of token ids.
	PromptTokens
	// PromptTokenBatch is an array of arrays of token ids (a batch).
	PromptTokenBatch
)

// String names the form.
func (f PromptForm) String() string {
	switch f {
	case PromptText:
		return "text"
	case PromptTexts:
		return "texts"
	case PromptTokens:
		return "tokens"
	case PromptTokenBatch:
		return "token-batch"
	}
	return "PromptForm(" + strconv.Itoa(int(f)) + ")"
}

// Prompt is a completion prompt as the router sees it: the first prompt of
// the request, which is the one it routes by, and how many prompts the
// request carries. For a batch every prompt was checked to be well formed,
// but only the first is kept.
type Prompt struct {
	// Form is the shape the prompt came in.
	Form PromptForm
	// Text is the first prompt when Form is PromptText or PromptTexts.
	Text string
	// Tokens are the first prompt's token ids when Form is PromptTokens or
	// PromptTokenBatch.
	Tokens []uint32
	// Count is the number of prompts: 1 for the single forms.
	Count int
}

// IsTokens reports whether the prompt came as token ids.
func (p Prompt) IsTokens() bool {
	return p.Form == PromptTokens || p.Form == PromptTokenBatch
}

// errPromptShape is the message for a prompt of the wrong shape.
const errPromptShape = "must be a string, an array of strings, an array of token ids or an array of arrays of token ids"

// parsePrompt parses a raw prompt value; raw is valid JSON (encoding/json
// checked it) and not null.
func parsePrompt(raw json.RawMessage) (Prompt, error) {
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Prompt{}, invalid("prompt", err.Error())
		}
		return Prompt{Form: PromptText, Text: s, Count: 1}, nil
	case '[':
	default:
		return Prompt{}, invalid("prompt", errPromptShape)
	}
	i := skipSpace(raw, 1)
	if i >= len(raw) {
		return Prompt{}, invalid("prompt", errPromptShape)
	}
	switch c := raw[i]; {
	case c == ']':
		return Prompt{}, invalid("prompt", "must not be empty")
	case c == '"':
		var ss []string
		if err := json.Unmarshal(raw, &ss); err != nil {
			return Prompt{}, invalid("prompt", errPromptShape)
		}
		return Prompt{Form: PromptTexts, Text: ss[0], Count: len(ss)}, nil
	case c == '[':
		return parseTokenBatch(raw)
	case c == '-' || (c >= '0' && c <= '9'):
		// A token array: size the slice from the comma count (exact for a
		// flat array of numbers).
		toks := make([]uint32, 0, bytes.Count(raw, []byte{','})+1)
		toks, end, err := scanTokens(raw, 0, toks)
		if err != nil {
			return Prompt{}, invalid("prompt", err.Error())
		}
		if skipSpace(raw, end) != len(raw) {
			return Prompt{}, invalid("prompt", errPromptShape)
		}
		return Prompt{Form: PromptTokens, Tokens: toks, Count: 1}, nil
	}
	return Prompt{}, invalid("prompt", errPromptShape)
}

// parseTokenBatch parses an array of token arrays, keeping the first.
func parseTokenBatch(raw []byte) (Prompt, error) {
	p := Prompt{Form: PromptTokenBatch}
	i := skipSpace(raw, 1)
	var scratch []uint32
	for {
		if i >= len(raw) || raw[i] != '[' {
			return Prompt{}, invalid("prompt", errPromptShape)
		}
		var err error
		if p.Count == 0 {
			p.Tokens, i, err = scanTokens(raw, i, nil)
		} else {
			scratch, i, err = scanTokens(raw, i, scratch[:0])
		}
		if err != nil {
			return Prompt{}, invalid("prompt["+strconv.Itoa(p.Count)+"]", err.Error())
		}
		p.Count++
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return Prompt{}, invalid("prompt", errPromptShape)
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			if skipSpace(raw, i+1) != len(raw) {
				return Prompt{}, invalid("prompt", errPromptShape)
			}
			return p, nil
		default:
			return Prompt{}, invalid("prompt", errPromptShape)
		}
	}
}

// scanTokens parses the array of token ids that starts at raw[i] == '[',
// appending to dst. It returns the index after the closing bracket. Token ids
// are plain non-negative integers that fit in uint32; an empty array is an
// error.
func scanTokens(raw []byte, i int, dst []uint32) ([]uint32, int, error) {
	if i >= len(raw) || raw[i] != '[' {
		return dst, i, errTokens("expected an array of token ids")
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		return dst, i + 1, errTokens("must not be empty")
	}
	for {
		if i >= len(raw) {
			return dst, i, errTokens("unterminated array")
		}
		start := i
		var v uint64
		for i < len(raw) && raw[i] >= '0' && raw[i] <= '9' {
			v = v*10 + uint64(raw[i]-'0')
			if v > math.MaxUint32 {
				return dst, i, errTokens("token id " + string(raw[start:i+1]) + "... exceeds 4294967295")
			}
			i++
		}
		if i == start {
			return dst, i, errTokens("token ids must be non-negative integers")
		}
		if i-start > 1 && raw[start] == '0' {
			return dst, i, errTokens("token id has a leading zero")
		}
		if i < len(raw) && (raw[i] == '.' || raw[i] == 'e' || raw[i] == 'E') {
			return dst, i, errTokens("token ids must be integers")
		}
		dst = append(dst, uint32(v))
		i = skipSpace(raw, i)
		if i >= len(raw) {
			return dst, i, errTokens("unterminated array")
		}
		switch raw[i] {
		case ',':
			i = skipSpace(raw, i+1)
		case ']':
			return dst, i + 1, nil
		default:
			return dst, i, errTokens("token ids must be non-negative integers")
		}
	}
}

// tokenError is a token-array scan error; the caller adds the parameter.
type tokenError string

func (e tokenError) Error() string { return string(e) }

func errTokens(msg string) error { return tokenError(msg) }

// skipSpace returns the index of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}
