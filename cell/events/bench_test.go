package events

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkApplyBatch measures the steady state of one holder: every batch
// stores a new chain of 4 engine blocks and removes the root of the chain
// stored 64 batches before (which cascades to its 4 blocks), so the holder
// tracks about 256 blocks. block-events/s counts engine blocks stored plus
// removed.
func BenchmarkApplyBatch(b *testing.B) {
	for _, sz := range []struct{ engine, router int }{{16, 16}, {16, 64}, {64, 16}} {
		b.Run(fmt.Sprintf("engine%d_router%d", sz.engine, sz.router), func(b *testing.B) {
			const chain, window = 4, 64
			ix := newTestIndex(b)
			a := newTestApplier(b, ix, sz.router)
			tokens := toks(1, chain*sz.engine)
			batch := &Batch{Pod: "p", DPRank: -1, Model: "m", Events: []Event{
				{Kind: KindBlockStored, BlockSize: sz.engine, TokenIDs: tokens, BlockHashes: make([]uint64, chain)},
				{Kind: KindBlockRemoved, BlockHashes: make([]uint64, 1)},
			}}
			hashOf := func(i, j int) uint64 { return uint64(i)*chain + uint64(j) + 1 }
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch.Seq = uint64(i)
				for j := range chain {
					batch.Events[0].BlockHashes[j] = hashOf(i, j)
				}
				tokens[0] = uint32(i) // a distinct router chain per batch
				batch.Events[1].BlockHashes[0] = hashOf(i-window, 0)
				if err := a.ApplyBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			blocks := float64(b.N) * 2 * chain
			b.ReportMetric(blocks/b.Elapsed().Seconds(), "block-events/s")
			if got := a.TrackedBlocks("p"); b.N > window && got != window*chain {
				b.Fatalf("got %d tracked blocks, want %d", got, window*chain)
			}
		})
	}
}
