package trace

import (
	"slices"
	"testing"
)

func TestAppendTokens(t *testing.T) {
	a := AppendTokens(nil, 42)
	if len(a) != TokensPerID {
		t.Fatalf("got %d tokens, want %d", len(a), TokensPerID)
	}
	if b := AppendTokens(make([]uint32, 0, 1024), 42); !slices.Equal(a, b) {
		t.Error("AppendTokens(42) is not deterministic")
	}
	for _, tok := range a {
		if tok >= Vocab {
			t.Fatalf("got token %d, want < %d", tok, Vocab)
		}
	}
	// Different ids give different blocks, and tokens within a block vary.
	seen := map[[4]uint32]uint64{}
	for id := uint64(0); id < 10000; id++ {
		toks := AppendTokens(nil, id)
		key := [4]uint32(toks[:4])
		if prev, ok := seen[key]; ok {
			t.Fatalf("ids %d and %d start with the same 4 tokens", prev, id)
		}
		seen[key] = id
	}
	distinct := map[uint32]bool{}
	for _, tok := range a {
		distinct[tok] = true
	}
	if len(distinct) < TokensPerID*9/10 {
		t.Errorf("got %d distinct tokens in one block, want most of %d", len(distinct), TokensPerID)
	}
	// Appending keeps what is already in dst.
	c := AppendTokens([]uint32{7}, 42)
	if c[0] != 7 || !slices.Equal(c[1:], a) {
		t.Error("AppendTokens did not append after existing elements")
	}
}
