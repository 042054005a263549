package enginesim

import (
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

func TestTokenizer(t *testing.T) {
	tok := Tokenizer{Vocab: trace.Vocab}
	w := func(s string) uint32 { return tok.wordID(s) }
	sp := func(s string) uint32 { _, id := special(s); return id }
	cases := []struct {
		name    string
		text    string
		special bool
		want    []uint32
	}{
		{"empty", "", false, nil},
		{"bos only", "", true, []uint32{TokenBOS}},
		{"words", "Hello  world\n", false, []uint32{w("Hello"), w("world")}},
		{"punctuation", "a,b!", true, []uint32{TokenBOS, w("a"), w(","), w("b"), w("!")}},
		{"specials", "<|bos|><|user|>hi<|eos|>", false, []uint32{TokenBOS, sp("<|user|>"), w("hi"), TokenEOS}},
		{"not special", "<|a b|>", false, []uint32{w("<"), w("|"), w("a"), w("b"), w("|"), w(">")}},
		{"unicode", "héllo 世界", false, []uint32{w("héllo"), w("世界")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tok.Encode(tc.text, tc.special, nil)
			if !slices.Equal(got, tc.want) {
				t.Errorf("Encode(%q, %v): got %v, want %v", tc.text, tc.special, got, tc.want)
			}
			for _, id := range got {
				if int(id) >= tok.Vocab {
					t.Errorf("got id %d, want < %d", id, tok.Vocab)
				}
			}
		})
	}
	if id := sp("<|user|>"); id < 3 || id >= ReservedTokens {
		t.Errorf("got special id %d, want in [3, %d)", id, ReservedTokens)
	}
	if id := w("x"); id < ReservedTokens {
		t.Errorf("got word id %d, want >= %d", id, ReservedTokens)
	}
}

// TestTokenizerPrefixStable checks the property prefix caching relies on:
// a text extended after whitespace tokenises to an extension of its tokens,
// and a conversation's next turn extends the previous turn's chat tokens
// up to the generation prompt.
func TestTokenizerPrefixStable(t *testing.T) {
	tok := Tokenizer{Vocab: trace.Vocab}
	a, b := words("p", 30), words("q", 10)
	ta := tok.Encode(a, true, nil)
	tab := tok.Encode(a+" "+b, true, nil)
	if !slices.Equal(tab[:len(ta)], ta) {
		t.Errorf("tokens(a+b) does not start with tokens(a)")
	}
	turn1 := []openai.Message{{Role: "system", Content: a}, {Role: "user", Content: b}}
	turn2 := append(slices.Clone(turn1), openai.Message{Role: "assistant", Content: "ok"}, openai.Message{Role: "user", Content: "more"})
	t1 := tok.EncodeChat(turn1, false, false, nil)
	t2 := tok.EncodeChat(turn2, true, false, nil)
	if !slices.Equal(t2[:len(t1)], t1) || t1[0] != TokenBOS {
		t.Errorf("turn 2 tokens do not extend turn 1's (%v...)", t1[:3])
	}
	if got := RenderChat([]openai.Message{{Role: "bad role|", Content: "x"}}, true); got != "<|bos|>\n<|other|>\nx\n<|end|>\n<|assistant|>\n" {
		t.Errorf("RenderChat with a bad role: got %q", got)
	}
}
