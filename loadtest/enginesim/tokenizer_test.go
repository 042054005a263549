package enginesim

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
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

// fixtureTokenizer is cachekey/tokenizer's small Qwen2-style fixture.
const fixtureTokenizer = "../../cachekey/tokenizer/testdata/qwen2.tokenizer.json"

// TestHFTokenizerMatchesCellTokenizer checks that a pod with an
// HFTokenizer answers /tokenize with exactly the ids cachekey/tokenizer gives
// for the same prompt and chat (what a cell or the global tier configured
// with the file and template computes), and that the chat template's
// refusals are 400s.
func TestHFTokenizerMatchesCellTokenizer(t *testing.T) {
	hf, err := LoadHFTokenizer(fixtureTokenizer, "chatml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Tokenizer = hf
	p := startPod(t, cfg)
	tmpl, _ := tokenizer.ChatTemplateByName("chatml")
	ref, err := tokenizer.LoadFile(fixtureTokenizer, tokenizer.Options{ChatTemplate: tmpl})
	if err != nil {
		t.Fatal(err)
	}
	msgs := []tokenizer.Message{{Role: "system", Content: "Route it."}, {Role: "user", Content: words("v", 40)}}
	wantChat, _ := ref.EncodeChat(context.Background(), msgs, nil)
	for _, tc := range []struct {
		name string
		body map[string]any
		want []uint32
	}{
		{"prompt", map[string]any{"prompt": words("w", 60)}, ref.EncodeString(words("w", 60), true, nil)},
		{"chat", map[string]any{"messages": msgs}, wantChat},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := post(t, p, PathTokenize, tc.body)
			var out struct {
				Tokens []uint32 `json:"tokens"`
			}
			if err := json.Unmarshal(r.body, &out); err != nil || r.status != 200 || !slices.Equal(out.Tokens, tc.want) {
				t.Fatalf("got %d %s, want 200 with %v", r.status, r.body, tc.want)
			}
		})
	}
	q, _ := LoadHFTokenizer(fixtureTokenizer, "qwen2.5")
	cfg.Tokenizer = q
	r := post(t, startPod(t, cfg), openai.PathChatCompletions, map[string]any{"messages": []map[string]string{{"role": "tool", "content": "42"}}})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "messages") {
		t.Fatalf("tool message under qwen2.5: got %d %s, want a 400 naming messages", r.status, r.body)
	}
}
