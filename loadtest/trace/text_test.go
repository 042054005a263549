package trace

import (
	"bytes"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
)

// TestAppendTextJoinsAtTokenBoundaries checks that AppendText is a pure
// function, that different ids give different texts, and that under the
// demo tokenizer the tokens of consecutive ids' texts are the texts'
// tokens one after the other, about TokensPerID per id.
func TestAppendTextJoinsAtTokenBoundaries(t *testing.T) {
	tok, err := tokenizer.Load(tokenizer.DemoJSON(), tokenizer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(AppendText(nil, 7), AppendText(nil, 7)) || bytes.Equal(AppendText(nil, 7), AppendText(nil, 8)) {
		t.Fatal("AppendText is not a pure function of the id, or ids collide")
	}
	total, ids := 0, 0
	for _, pair := range [][2]uint64{{0, 1}, {1, 2}, {42, 1e9}, {3, 3}} {
		a, b := AppendText(nil, pair[0]), AppendText(nil, pair[1])
		ta, tb := tok.EncodeString(string(a), false, nil), tok.EncodeString(string(b), false, nil)
		got := tok.EncodeString(string(append(slices.Clone(a), b...)), false, nil)
		if !slices.Equal(got, append(slices.Clone(ta), tb...)) {
			t.Fatalf("ids %v: tokens of the joined texts are not the texts' tokens in turn", pair)
		}
		total += len(ta) + len(tb)
		ids += 2
	}
	if per := total / ids; per < TokensPerID/2 || per > TokensPerID*2 {
		t.Fatalf("%d tokens per id, want about %d", per, TokensPerID)
	}
}
