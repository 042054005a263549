package enginesim

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cellrouter/cellrouter/api/openai"
)

// Special token ids of the simulator's tokenizer. Ids below ReservedTokens
// are never produced for ordinary text.
const (
	// TokenBOS starts a sequence: prepended to a completion prompt when
	// add_special_tokens is true, and the chat template's first token.
	TokenBOS uint32 = 1
	// TokenEOS is the end-of-sequence token (never generated: the simulator
	// always decodes up to max_tokens).
	TokenEOS uint32 = 2
	// ReservedTokens is the number of ids kept for special tokens: other
	// markers <|name|> map into [3, ReservedTokens).
	ReservedTokens = 256
)

// maxSpecialName bounds the name of a <|name|> special token.
const maxSpecialName = 32

// Tokenizer is the simulator's deterministic text tokenizer. It is a pure
// function of its vocabulary size, so /tokenize and the completion
// endpoints of every pod with the same Vocab agree:
//
//   - "<|bos|>" is TokenBOS, "<|eos|>" TokenEOS, and any other "<|name|>"
//     (name of 1 to 32 letters, digits, '_' or '-') is 3 + FNV-1a(name) mod
//     253;
//   - a maximal run of letters and digits is one word, and every other
//     non-space character is a word of its own; whitespace only separates;
//   - a word's id is ReservedTokens + FNV-1a-64(word) mod (Vocab -
//     ReservedTokens).
//
// Because whitespace only separates, tokens(a+" "+b) = tokens(a) followed
// by tokens(b): a conversation's next turn extends the previous turn's
// tokens, as a real tokenizer (almost) does. A Tokenizer is a plain value,
// safe for concurrent use.
type Tokenizer struct {
	// Vocab is the vocabulary size, at least 2*ReservedTokens.
	Vocab int
}

// Encode appends the ids of text to dst, after TokenBOS when addSpecial is
// true, and returns the extended slice.
func (t Tokenizer) Encode(text string, addSpecial bool, dst []uint32) []uint32 {
	if addSpecial {
		dst = append(dst, TokenBOS)
	}
	for i := 0; i < len(text); {
		if n, id := special(text[i:]); n > 0 {
			dst = append(dst, id)
			i += n
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case unicode.IsSpace(r):
			i += size
		case isWordRune(r):
			j := i + size
			for j < len(text) {
				r2, s2 := utf8.DecodeRuneInString(text[j:])
				if !isWordRune(r2) {
					break
				}
				j += s2
			}
			dst = append(dst, t.wordID(text[i:j]))
			i = j
		default:
			dst = append(dst, t.wordID(text[i:i+size]))
			i += size
		}
	}
	return dst
}

// isWordRune reports whether r belongs to a word.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// special reports the length and id of a special token <|name|> at the
// start of s, or 0 when s does not start with one.
func special(s string) (int, uint32) {
	if len(s) < 5 || s[0] != '<' || s[1] != '|' {
		return 0, 0
	}
	end := strings.Index(s[2:min(len(s), 2+maxSpecialName+2)], "|>")
	if end < 1 {
		return 0, 0
	}
	name := s[2 : 2+end]
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return 0, 0
		}
	}
	n := end + 4
	switch name {
	case "bos":
		return n, TokenBOS
	case "eos":
		return n, TokenEOS
	}
	return n, 3 + uint32(fnv1a(name)%(ReservedTokens-3))
}

// wordID returns the id of one word.
func (t Tokenizer) wordID(w string) uint32 {
	return ReservedTokens + uint32(fnv1a(w)%uint64(t.Vocab-ReservedTokens))
}

// fnv1a is the 64-bit FNV-1a hash of s.
func fnv1a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// RenderChat renders messages with the simulator's chat template:
//
//	<|bos|>                                   (once)
//	<|ROLE|> CONTENT <|end|>                  (per message, ROLE sanitised)
//	<|assistant|>                             (when addGenerationPrompt)
//
// with a newline after each part. Roles that are not a valid special-token
// name are replaced by "other".
func RenderChat(messages []openai.Message, addGenerationPrompt bool) string {
	var b strings.Builder
	b.WriteString("<|bos|>\n")
	for _, m := range messages {
		b.WriteString("<|")
		b.WriteString(roleName(m.Role))
		b.WriteString("|>\n")
		b.WriteString(m.Content)
		b.WriteString("\n<|end|>\n")
	}
	if addGenerationPrompt {
		b.WriteString("<|assistant|>\n")
	}
	return b.String()
}

// roleName returns role when it is a valid special-token name, else "other".
func roleName(role string) string {
	if n, _ := special("<|" + role + "|>"); n == len(role)+4 {
		return role
	}
	return "other"
}

// EncodeChat appends the ids of the rendered chat to dst (with TokenBOS
// again in front when addSpecial is true, as vLLM does when asked) and
// returns the extended slice.
func (t Tokenizer) EncodeChat(messages []openai.Message, addGenerationPrompt, addSpecial bool, dst []uint32) []uint32 {
	return t.Encode(RenderChat(messages, addGenerationPrompt), addSpecial, dst)
}

// outputToken returns the k-th generated token of a request whose prompt
// chain ends in (or whose prompt hashes to) key: a deterministic word id.
func (t Tokenizer) outputToken(key uint64, k int) uint32 {
	x := key + uint64(k+1)*0x9e3779b97f4a7c15
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	return ReservedTokens + uint32(x%uint64(t.Vocab-ReservedTokens))
}

// appendTokenText appends the text of generated token id: " t<id>".
func appendTokenText(dst []byte, id uint32) []byte {
	dst = append(dst, " t"...)
	return strconv.AppendUint(dst, uint64(id), 10)
}
