package events

import (
	"context"
	"testing"

	"github.com/cellrouter/cellrouter/cell/index"
)

// BenchmarkApplyEviction compares the cost of a batch when the engine's own
// removals keep a holder at 256 blocks (engine_removes: what a healthy pod
// costs, as in BenchmarkApplyBatch) with the same stores when the Applier
// must evict to keep the holder within its bound (pod_bound: no removal
// events, the holder's bound is 256 blocks) or within its fair share of a
// full index (fair_share: the index holds 256 blocks, the holder's bound is
// larger, so every batch is refused, relieved and applied again). Each
// batch stores a new chain of 4 engine blocks of 16 tokens (router blocks
// of 16). block-events/s counts the engine blocks stored plus those removed
// or evicted.
func BenchmarkApplyEviction(b *testing.B) {
	const chain, window = 4, 64
	for _, tc := range []struct {
		name             string
		maxBlocks, bound int
		remove           bool
	}{
		{"engine_removes", 1 << 20, 1 << 20, true},
		{"pod_bound", 1 << 20, chain * window, false},
		{"fair_share", chain * window, 1 << 20, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			icfg := index.DefaultConfig()
			icfg.MaxBlocks = tc.maxBlocks
			ix, err := index.New(icfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(ix.Close)
			cfg := DefaultConfig()
			cfg.MaxIndexBlocksPerPod = tc.bound
			a, err := NewApplier(cfg, ix, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			tokens := toks(1, chain*16)
			batch := &Batch{Pod: "p", DPRank: -1, Model: "m", Events: []Event{
				{Kind: KindBlockStored, BlockSize: 16, TokenIDs: tokens, BlockHashes: make([]uint64, chain)},
			}}
			if tc.remove {
				batch.Events = append(batch.Events, Event{Kind: KindBlockRemoved, BlockHashes: make([]uint64, 1)})
			}
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
				if tc.remove {
					batch.Events[1].BlockHashes[0] = hashOf(i-window, 0)
				}
				if err := a.ApplyBatch(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)*2*chain/b.Elapsed().Seconds(), "block-events/s")
			if got := a.IndexedBlocks("p"); b.N > window && got > chain*window {
				b.Fatalf("holder indexes %d blocks, want at most %d", got, chain*window)
			}
			if !tc.remove && b.N > 2*window && a.Counters().Evicted[EvictPodBound].Load()+a.Counters().Evicted[EvictFairShare].Load() == 0 {
				b.Fatal("nothing evicted: the benchmark measures no eviction")
			}
		})
	}
}
