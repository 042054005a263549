package blockhash

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkChain measures Chain over a 4096-token prompt (8192 for the
// 512-token blocks, so there are several) into a reused dst, and reports
// the cost per block.
func BenchmarkChain(b *testing.B) {
	for _, bs := range []int{16, 64, 512} {
		b.Run(fmt.Sprintf("block=%d", bs), func(b *testing.B) {
			h := mustHasher(b, bs)
			n := max(4096, 16*bs)
			toks := randTokens(rand.New(rand.NewPCG(1, 1)), n, 128000)
			seed := Seed(Keys{Model: "meta-llama/Llama-3.1-8B"})
			blocks := h.NumBlocks(n)
			dst := make([]Hash, 0, blocks)
			b.SetBytes(int64(n * 4))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				dst = h.Chain(seed, toks, dst[:0])
			}
			b.StopTimer()
			if len(dst) != blocks {
				b.Fatalf("got %d hashes want %d", len(dst), blocks)
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(ns/float64(blocks), "ns/block")
		})
	}
}

// BenchmarkSeed measures Seed on keys of a typical size.
func BenchmarkSeed(b *testing.B) {
	k := Keys{
		Model:           "meta-llama/Llama-3.1-8B-Instruct",
		LoRA:            "sql-adapter",
		CacheSalt:       "tenant-0042",
		MultimodalIDs:   []string{"sha256:4f2a9c", "sha256:77be01"},
		RouteTemplate:   "route-a",
		VirtualLayer:    VirtualLayer(1, 12, 3),
		HasVirtualLayer: true,
	}
	b.ReportAllocs()
	var sink Hash
	for b.Loop() {
		sink ^= Seed(k)
	}
	if sink == 1 {
		b.Log("unlikely")
	}
}

// BenchmarkMix measures one chaining step alone.
func BenchmarkMix(b *testing.B) {
	b.ReportAllocs()
	h := Hash(1)
	for b.Loop() {
		h = Mix(h, 0x1234)
	}
	if h == 0 {
		b.Fatal("Mix returned zero")
	}
}
