package index

import (
	"math/rand/v2"
	"testing"
)

// TestTiersCount checks Tiers against a naive model: for one pod, a map
// from block to the set of tiers holding it, driven by random stores and
// removes on random tiers.
func TestTiersCount(t *testing.T) {
	ix := newTestIndex(t, DefaultConfig())
	s, _ := ix.Register("pod")
	pool := chainOf(64, 11)
	model := map[BlockHash]tierSet{}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 5000 {
		h := pool[rng.IntN(len(pool))]
		tier := Tier(rng.IntN(int(TierStorage) + 1))
		if rng.IntN(3) > 0 {
			ix.Store(s, tier, []BlockHash{h})
			model[h] |= tierBit(tier)
		} else {
			ix.Remove(s, tier, []BlockHash{h})
			if model[h] &^= tierBit(tier); model[h] == 0 {
				delete(model, h)
			}
		}
		if step%97 != 0 {
			continue
		}
		var want TierBlocks
		gpu := 0
		for _, ts := range model {
			if ts&tierBit(TierGPU) != 0 {
				gpu++
			}
			if ts == gpuOnly {
				continue
			}
			want.Listed++
			for tt := TierGPU; tt <= TierStorage; tt++ {
				if ts&tierBit(tt) != 0 {
					want.On[tt]++
				}
			}
		}
		got := ix.Tiers(s)
		if got != want {
			t.Fatalf("step %d: Tiers = %+v, want %+v", step, got, want)
		}
		if g := got.GPU(len(model)); g != gpu {
			t.Fatalf("step %d: GPU(%d) = %d, want %d", step, len(model), g, gpu)
		}
	}
}
