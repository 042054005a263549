package blockhash

import (
	"encoding/binary"
	"slices"
	"testing"
)

// FuzzChain feeds arbitrary bytes as tokens (four bytes each) and an
// arbitrary block size, and checks Chain against the reference, the block
// count, the prefix property and that no hash is zero.
func FuzzChain(f *testing.F) {
	f.Add(uint16(16), "m", []byte{})
	f.Add(uint16(1), "", []byte{1, 0, 0, 0, 2, 0, 0, 0})
	f.Add(uint16(3), "llama", make([]byte, 4*10+2))
	f.Add(uint16(0), "x", []byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, bs16 uint16, model string, raw []byte) {
		bs := int(bs16)%64 + 1
		h := mustHasher(t, bs)
		toks := make([]Token, len(raw)/4)
		for i := range toks {
			toks[i] = binary.LittleEndian.Uint32(raw[i*4:])
		}
		seed := Seed(Keys{Model: model})
		got := h.Chain(seed, toks, nil)
		if len(got) != len(toks)/bs {
			t.Fatalf("len: got %d want %d", len(got), len(toks)/bs)
		}
		want := refChain(bs, refSeed(Keys{Model: model}), toks)
		for i := range got {
			if uint64(got[i]) != want[i] {
				t.Fatalf("block %d: got %#x want %#x", i, got[i], want[i])
			}
			if got[i] == 0 {
				t.Fatalf("block %d: got the reserved zero Hash", i)
			}
		}
		half := toks[:len(toks)/2]
		if short := h.Chain(seed, half, nil); !slices.Equal(short, got[:len(short)]) {
			t.Fatalf("prefix property: got %v, not a prefix of %v", short, got)
		}
	})
}
