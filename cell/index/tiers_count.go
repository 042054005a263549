package index

// TierBlocks is how the blocks one pod holds spread over the tiers, as the
// pod's tier map knows it: the map lists only the blocks that are not on
// the GPU tier alone, and every block it does not list is on the GPU.
type TierBlocks struct {
	// Listed is the number of the pod's blocks the tier map lists.
	Listed int
	// On counts the listed blocks on each tier (a block may be on more
	// than one).
	On [TierStorage + 1]int
}

// GPU returns how many blocks the pod holds on the GPU when it holds held
// blocks in all: the ones not listed and the listed ones also on the GPU.
func (t TierBlocks) GPU(held int) int { return max(0, held-t.Listed) + t.On[TierGPU] }

// Tiers counts the blocks of pod s by tier. It takes the pod's tier-map
// lock and walks the map, which is empty for a pod that only reports GPU
// blocks: call it from a status page or a scrape, not from a hot path.
func (ix *Index) Tiers(s Slot) TierBlocks {
	tm := &ix.tiers[s]
	var out TierBlocks
	if tm.n.Load() == 0 {
		return out
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	out.Listed = len(tm.m)
	for _, ts := range tm.m {
		for t := TierGPU; t <= TierStorage; t++ {
			if ts&tierBit(t) != 0 {
				out.On[t]++
			}
		}
	}
	return out
}
