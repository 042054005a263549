package index

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"testing"
)

// benchIndex builds an index shaped like a real cell: 256 pods, a system
// prompt of 32 blocks every pod holds, and chains that one to four pods hold
// below it, blocks in all.
func benchIndex(b *testing.B, blocks int) (*Index, [][]BlockHash) {
	return benchIndexLayout(b, blocks, LayoutBlock)
}

// benchIndexLayout is benchIndex with the given layout.
func benchIndexLayout(b *testing.B, blocks int, layout Layout) (*Index, [][]BlockHash) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.Layout = layout
	ix, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(ix.Close)
	for i := 0; i < MaxPods; i++ {
		ix.Register("pod-" + itoa(i))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	system := chainOf(32, 1<<30)
	for s := 0; s < MaxPods; s++ {
		ix.Store(Slot(s), TierGPU, system)
	}
	var chains [][]BlockHash
	for n := 32; n < blocks; {
		tail := 64 + rng.IntN(512)
		c := append(append([]BlockHash(nil), system...), chainOf(tail, uint64(len(chains)+2))...)
		holders := 1 + rng.IntN(4)
		for h := 0; h < holders; h++ {
			// Each holder keeps a prefix of the tail: distinct drop-off depths.
			ix.Store(Slot(rng.IntN(MaxPods)), TierGPU, c[:32+tail*(h+1)/holders])
		}
		chains = append(chains, c)
		n += tail
	}
	return ix, chains
}

func BenchmarkMatch(b *testing.B) {
	ix, chains := benchIndex(b, 1<<20)
	benchMatch(b, ix, chains)
}

func benchMatch(b *testing.B, ix *Index, chains [][]BlockHash) {
	var r MatchResult
	b.ReportAllocs()
	b.ResetTimer()
	lookups, rounds := 0, 0
	for i := 0; i < b.N; i++ {
		ix.Match(chains[i%len(chains)], &r)
		lookups += r.Lookups()
		rounds += r.Rounds()
	}
	b.ReportMetric(float64(lookups)/float64(b.N), "lookups/op")
	b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
}

// BenchmarkMatchLayouts is BenchmarkMatch (1M blocks, beyond the caches)
// and BenchmarkMatchSmall (32K blocks, in cache) for each layout, side by
// side; lookups/op counts page reads for the paged layout.
func BenchmarkMatchLayouts(b *testing.B) {
	for _, lay := range []Layout{LayoutBlock, LayoutPaged} {
		for _, size := range []struct {
			name   string
			blocks int
		}{{"1M", 1 << 20}, {"32K", 1 << 15}} {
			b.Run(string(lay)+"/"+size.name, func(b *testing.B) {
				ix, chains := benchIndexLayout(b, size.blocks, lay)
				benchMatch(b, ix, chains)
			})
		}
	}
}

// BenchmarkMatchWhileWriting measures queries while another goroutine keeps
// storing and removing blocks in the same index.
func BenchmarkMatchWhileWriting(b *testing.B) {
	ix, chains := benchIndex(b, 1<<20)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		extra := chainOf(4096, 999)
		for i := 0; !stop.Load(); i++ {
			s := Slot(i % MaxPods)
			ix.Store(s, TierGPU, extra[:64])
			ix.Remove(s, TierGPU, extra[:64])
		}
	}()
	var r MatchResult
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix.Match(chains[i%len(chains)], &r)
	}
	b.StopTimer()
	stop.Store(true)
	<-done
}

func BenchmarkMatchParallel(b *testing.B) {
	ix, chains := benchIndex(b, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var r MatchResult
		i := 0
		for pb.Next() {
			ix.Match(chains[i%len(chains)], &r)
			i++
		}
	})
}

// BenchmarkApplyStore replays what an engine's BlockStored events do to an
// index that already holds 1M blocks: batches of 512 stores of new blocks
// for one pod, then their removal (the engine evicts them), so the table
// size stays steady. block-ops/s counts both.
func BenchmarkApplyStore(b *testing.B) {
	ix, _ := benchIndex(b, 1<<20)
	ops := make([]Op, 512)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		base := uint64(i) << 9
		s := Slot(i % MaxPods)
		for j := range ops {
			ops[j] = Op{Kind: OpStore, Slot: s, Hash: BlockHash((base + uint64(j) + 1) * 0xBF58476D1CE4E5B9)}
		}
		ix.Apply(ops)
		for j := range ops {
			ops[j].Kind = OpRemove
		}
		ix.Apply(ops)
	}
	b.ReportMetric(float64(b.N*2*len(ops))/b.Elapsed().Seconds(), "block-ops/s")
}

// BenchmarkStoreRemove stores a 16-block chain for one pod and removes it.
func BenchmarkStoreRemove(b *testing.B) {
	ix, _ := benchIndex(b, 1<<16)
	chain := chainOf(16, 12345)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		s := Slot(i % MaxPods)
		ix.Store(s, TierGPU, chain)
		ix.Remove(s, TierGPU, chain)
	}
	b.ReportMetric(float64(b.N*2*len(chain))/b.Elapsed().Seconds(), "block-ops/s")
}

// BenchmarkMemory reports the heap bytes per indexed block for 2M blocks
// held by one pod each.
func BenchmarkMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ix, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		for p := 0; p < MaxPods; p++ {
			ix.Register("p" + itoa(p))
		}
		const n = 2 << 20
		ops := make([]Op, 0, 4096)
		for k := 0; k < n; k++ {
			ops = append(ops, Op{Kind: OpStore, Slot: Slot(k % MaxPods), Hash: BlockHash(uint64(k+1) * 0xBF58476D1CE4E5B9)})
			if len(ops) == cap(ops) {
				ix.Apply(ops)
				ops = ops[:0]
			}
		}
		ix.Apply(ops)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(ix.Stats().Blocks), "bytes/block")
		b.ReportMetric(float64(ix.Stats().TableBytes)/float64(ix.Stats().Blocks), "table-bytes/block")
		runtime.KeepAlive(ix)
		ix.Close()
	}
}

// BenchmarkMatchSmall is BenchmarkMatch on an index that fits in cache: the
// difference between the two is the cost of memory misses.
func BenchmarkMatchSmall(b *testing.B) {
	ix, chains := benchIndex(b, 1<<15)
	var r MatchResult
	b.ReportAllocs()
	b.ResetTimer()
	lookups := 0
	for i := 0; i < b.N; i++ {
		ix.Match(chains[i%len(chains)], &r)
		lookups += r.Lookups()
	}
	b.ReportMetric(float64(lookups)/float64(b.N), "lookups/op")
}

// BenchmarkApplyPrefetch compares batched stores with and without the
// prefetch pass, side by side, on an index of 4M blocks (tables far larger
// than the caches).
func BenchmarkApplyPrefetch(b *testing.B) {
	ix, _ := benchIndex(b, 1<<22)
	ops := make([]Op, 512)
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			defer func(old bool) { prefetchWrites = old }(prefetchWrites)
			prefetchWrites = on
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				base := uint64(i) << 9
				s := Slot(i % MaxPods)
				for j := range ops {
					ops[j] = Op{Kind: OpStore, Slot: s, Hash: BlockHash((base + uint64(j) + 1) * 0xBF58476D1CE4E5B9)}
				}
				ix.Apply(ops)
				for j := range ops {
					ops[j].Kind = OpRemove
				}
				ix.Apply(ops)
			}
			b.ReportMetric(float64(b.N*2*len(ops))/b.Elapsed().Seconds(), "block-ops/s")
		})
	}
}
