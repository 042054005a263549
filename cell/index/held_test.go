package index

import "testing"

// TestHeldCounts: Held follows the holder bits through what the reference
// test does not reach: a block also on another tier, stores refused at the
// cap, a second pod sharing blocks, and a killed pod's slot reused.
func TestHeldCounts(t *testing.T) {
	for _, lay := range []Layout{LayoutBlock, LayoutPaged} {
		t.Run(string(lay), func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Layout, cfg.MaxBlocks = lay, 6
			ix := newTestIndex(t, cfg)
			a, _ := ix.Register("a")
			b, _ := ix.Register("b")
			chain := []BlockHash{11, 12, 13, 14}
			// last applies one op on chain's last block, placed in chain.
			last := func(k OpKind, tier Tier) {
				op := Op{Kind: k, Slot: a, Tier: tier, Hash: chain[3]}
				op.SetPlace(chain, 3)
				ix.Apply([]Op{op})
			}
			check := func(what string, s Slot, want int) {
				t.Helper()
				if got := ix.Held(s); got != want {
					t.Fatalf("%s: Held(%d) = %d, want %d", what, s, got, want)
				}
			}
			ix.Store(a, TierGPU, chain)
			ix.Store(a, TierGPU, chain) // idempotent
			check("stored twice", a, 4)
			ix.Store(b, TierGPU, chain[:2])
			check("shared blocks", b, 2)
			check("shared blocks, first pod", a, 4)
			last(OpStore, TierCPU) // also offloaded: still one block
			check("offloaded copy", a, 4)
			last(OpRemove, TierGPU) // still on the CPU tier
			check("dropped from the GPU, kept on the CPU", a, 4)
			last(OpRemove, TierCPU)
			check("dropped from both tiers", a, 3)
			ix.Store(b, TierGPU, []BlockHash{11, 12, 21, 22, 23, 24}) // the cap (6 blocks) refuses some
			if got, want := ix.Held(b), ix.Blocks()-3+2; int64(got) != want {
				t.Fatalf("at the cap: Held(b) = %d, want %d (blocks %d)", got, want, ix.Blocks())
			}
			ix.Kill(a)
			check("killed", a, 0)
			ix.WaitSweeps()
			c, _ := ix.Register("c")
			check("slot reused", c, 0)
			ix.ClearPod(b)
			check("cleared", b, 0)
		})
	}
}
