package indexbench

import (
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// indexers returns a fresh instance of each indexer with 4 pods.
func indexers(t *testing.T) map[string]Indexer {
	t.Helper()
	out := map[string]Indexer{}
	for _, f := range []Factory{CellIndex, NaiveIndex} {
		ix, err := f.New(4, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ix.Close)
		out[f.Name] = ix
	}
	return out
}

func ops(kind index.OpKind, slot index.Slot, hs ...blockhash.Hash) []index.Op {
	out := make([]index.Op, len(hs))
	for i, h := range hs {
		out[i] = index.Op{Kind: kind, Slot: slot, Tier: index.TierGPU, Hash: h}
	}
	return out
}

func TestIndexersMatch(t *testing.T) {
	chain := []blockhash.Hash{11, 12, 13, 14}
	for name, ix := range indexers(t) {
		t.Run(name, func(t *testing.T) {
			ix.Apply(ops(index.OpStore, 0, 11, 12, 13, 14))
			ix.Apply(ops(index.OpStore, 1, 11, 12))
			ix.Apply(ops(index.OpStore, 2, 11, 12, 13))
			ix.Apply(ops(index.OpStore, 2, 11)) // idempotent
			ix.Apply(ops(index.OpRemove, 2, 13))
			ix.Apply(ops(index.OpRemove, 3, 11)) // not held: no-op
			m := ix.NewMatcher()
			m.Match(chain)
			want := []int{4, 2, 2, 0}
			for s, w := range want {
				if got := m.Depth(index.Slot(s)); got != w {
					t.Errorf("pod %d: got depth %d, want %d", s, got, w)
				}
			}
			if got := ix.Blocks(); got != 4 {
				t.Errorf("got %d blocks, want 4", got)
			}
			ix.Apply(ops(index.OpRemove, 0, 14, 13))
			if got := ix.Blocks(); got != 2 {
				t.Errorf("after removals got %d blocks, want 2", got)
			}
			m.Match(chain[:1])
			if got := m.Depth(3); got != 0 {
				t.Errorf("pod 3: got depth %d, want 0", got)
			}
		})
	}
}
