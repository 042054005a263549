package events

import (
	"context"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// TestForEachBlockDepths checks that the walk reports every indexed block
// once with its depth in router blocks, for engine and router block sizes
// that differ.
func TestForEachBlockDepths(t *testing.T) {
	for _, sizes := range []struct{ engine, router int }{{16, 16}, {16, 64}, {64, 16}} {
		ix, err := index.New(index.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		cfg := DefaultConfig()
		cfg.BlockSize = sizes.router
		a, err := NewApplier(cfg, ix, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		toks := make([]uint32, 8*64)
		for i := range toks {
			toks[i] = uint32(i * 7)
		}
		nEngine := len(toks) / sizes.engine
		hashes := make([]uint64, nEngine)
		for i := range hashes {
			hashes[i] = uint64(1000 + i)
		}
		b := &Batch{Pod: "p", Model: "m", DPRank: -1, Events: []Event{{Kind: KindBlockStored, BlockHashes: hashes, TokenIDs: toks, BlockSize: sizes.engine}}}
		if err := a.ApplyBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
		h := blockhash.DefaultHasher()
		h.BlockSize = sizes.router
		want := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
		got := map[index.BlockHash]int{}
		a.ForEachBlock(func(x index.BlockHash, d int) { got[x] = d })
		if len(got) != len(want) {
			t.Fatalf("%v: walk reported %d blocks, want %d", sizes, len(got), len(want))
		}
		for i, x := range want {
			if got[x] != i+1 {
				t.Fatalf("%v: block %d reported at depth %d, want %d", sizes, i, got[x], i+1)
			}
		}
		ix.Close()
	}
}
