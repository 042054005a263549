package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// BenchmarkAdmit admits chains of 64-768 blocks that share prefixes into a
// 16,384-block cache that is full and evicting, as in the trace replay.
func BenchmarkAdmit(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	chains := make([][]blockhash.Hash, 512)
	var blocks int
	for i := range chains {
		n := 64 * (1 + rng.IntN(12))
		chain := make([]blockhash.Hash, n)
		var h uint64 = 99
		for j := range chain {
			sym := uint64(0)
			if j >= 32 || rng.IntN(4) == 0 {
				sym = rng.Uint64() % 50
			}
			h = (h^sym)*0x9e3779b97f4a7c15 + uint64(j)
			h ^= h >> 31
			chain[j] = blockhash.Hash(h | 1)
		}
		chains[i] = chain
		blocks += n
	}
	c := NewCache(16384)
	removed := make([]blockhash.Hash, 0, 1024)
	b.ReportAllocs()
	b.ResetTimer()
	var now int64
	for i := 0; b.Loop(); i++ {
		now++
		ad := c.Admit(now, chains[i%len(chains)], removed)
		removed = ad.Removed
	}
	b.ReportMetric(float64(blocks)/float64(len(chains)), "blocks/op")
}
