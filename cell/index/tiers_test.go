package index

import (
	"math/rand/v2"
	"testing"
)

// TestTiersAgainstReference applies random store and remove ops on a few
// blocks and tiers, several to one Apply call, and checks after every call
// that each pod holds exactly the blocks a naive per-block tier set says it
// holds, and that TierOf names the best tier of that set. Ops on one block
// within one call (a GPU store and a CPU store of the same block in one
// engine batch) once left the tier map without the GPU copy, so that a
// later CPU removal dropped a block still on the GPU.
func TestTiersAgainstReference(t *testing.T) {
	for _, lay := range testLayouts {
		t.Run(string(lay), func(t *testing.T) { testTiersAgainstReference(t, lay) })
	}
}

func testTiersAgainstReference(t *testing.T, lay Layout) {
	cfg := DefaultConfig()
	cfg.Layout = lay
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		ix := newTestIndex(t, cfg)
		slots := make([]Slot, 2)
		for i := range slots {
			slots[i], _ = ix.Register(string(rune('a' + i)))
		}
		// A chain across a page boundary, so that both pages are written.
		hashes := chainOf(PageSize+4, seed)[PageSize-2:]
		places := make([]Op, len(hashes))
		for i := range places {
			places[i].SetPlace(chainOf(PageSize+4, seed), PageSize-2+i)
		}
		type key struct {
			s Slot
			h BlockHash
		}
		ref := map[key]uint8{} // tier bits each pod keeps a block on
		for step := 0; step < 300; step++ {
			ops := make([]Op, 1+rng.IntN(6))
			for i := range ops {
				hi := rng.IntN(len(hashes))
				op := Op{Kind: OpStore, Slot: slots[rng.IntN(len(slots))], Tier: Tier(rng.IntN(3)), Hash: hashes[hi],
					Pos: places[hi].Pos, Page: places[hi].Page}
				if rng.IntN(2) == 0 {
					op.Kind = OpRemove
				}
				ops[i] = op
				k := key{op.Slot, op.Hash}
				if op.Kind == OpStore {
					ref[k] |= 1 << op.Tier
				} else {
					ref[k] &^= 1 << op.Tier
				}
			}
			ix.Apply(ops)
			for _, s := range slots {
				for hi, h := range hashes {
					want := ref[key{s, h}]
					if got := ix.holdsOp(&Op{Slot: s, Hash: h, Pos: places[hi].Pos, Page: places[hi].Page}); got != (want != 0) {
						t.Fatalf("seed %d step %d: slot %d block %x: got held %v, want tiers %03b (ops %v)", seed, step, s, h, got, want, ops)
					}
					if want == 0 {
						continue
					}
					best := TierGPU
					for want&(1<<best) == 0 {
						best++
					}
					if got := ix.TierOf(s, h); got != best {
						t.Fatalf("seed %d step %d: slot %d block %x: got TierOf %d, want %d (tiers %03b)", seed, step, s, h, got, best, want)
					}
				}
			}
		}
	}
}
