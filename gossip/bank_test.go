package gossip

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// refDepths is the naive reference of Bank.Depths: every cell's own
// Summary.Depth, the cells at depth 0 left out, sorted by cell.
func refDepths(sums map[int]*Summary, chain []blockhash.Hash) []CellDepth {
	var out []CellDepth
	for c, s := range sums {
		if d := s.Depth(chain); d > 0 {
			out = append(out, CellDepth{Cell: c, Depth: d})
		}
	}
	slices.SortFunc(out, func(a, b CellDepth) int { return a.Cell - b.Cell })
	return out
}

func sortedDepths(b *Bank, chain []blockhash.Hash) []CellDepth {
	out := b.Depths(chain, nil)
	slices.SortFunc(out, func(a, b CellDepth) int { return a.Cell - b.Cell })
	return out
}

// TestBankAgainstReference drives a bank through random generations of up
// to 150 cells (past two row widenings), with filters small and full
// enough that false positives make many searches non-monotone, changes of
// shape, removals and re-additions, and checks after every step that
// Depths equals every cell's own Summary.Depth on chains held at random
// depths, on chains nobody holds, and on short chains.
func TestBankAgainstReference(t *testing.T) {
	r := newRand(7)
	pool := make([][]blockhash.Hash, 40)
	for i := range pool {
		pool[i] = randChain(r, 1+r.IntN(300))
	}
	cfgs := []SummaryConfig{
		{FalsePositiveRate: 0.2, ExpectedElements: 256, Stride: 4, Head: 1, MaxBits: 1 << 12},
		{FalsePositiveRate: 0.05, ExpectedElements: 512, Stride: 4, Head: 1, MaxBits: 1 << 14},
		{FalsePositiveRate: 0.1, ExpectedElements: 256, Stride: 2, Head: 3, MaxBits: 1 << 13},
	}
	build := func(cfg SummaryConfig) *Summary {
		b := mustBuilder(t, cfg)
		for range r.IntN(12) {
			c := pool[r.IntN(len(pool))]
			held := 1 + r.IntN(len(c))
			for d := 1; d <= held; d++ {
				b.Add(c[d-1], d)
			}
		}
		for range r.IntN(200) { // unrelated blocks fill the filter
			b.Add(blockhash.Hash(r.Uint64()), 1+r.IntN(400))
		}
		return b.Build()
	}
	bank := NewBank()
	sums := map[int]*Summary{}
	found, depths := 0, map[int]bool{}
	check := func(step string) {
		t.Helper()
		chains := append([][]blockhash.Hash{randChain(r, 50), randChain(r, 1), nil}, pool...)
		for i, c := range chains {
			got, want := sortedDepths(bank, c), refDepths(sums, c)
			if !slices.Equal(got, want) {
				t.Fatalf("%s: chain %d (%d blocks): got %v, want %v", step, i, len(c), got, want)
			}
			found += len(got)
			for _, g := range got {
				depths[g.Depth] = true
			}
		}
		if bank.Len() != len(sums) {
			t.Fatalf("%s: Len got %d, want %d", step, bank.Len(), len(sums))
		}
	}
	for step := range 400 {
		cell := r.IntN(150)
		switch x := r.IntN(10); {
		case x < 1: // remove
			bank.Remove(cell)
			delete(sums, cell)
		case x < 3: // a change of shape
			s := build(cfgs[r.IntN(len(cfgs))])
			bank.Set(cell, s)
			sums[cell] = s
		default: // a new generation of the cell's usual shape
			s := build(cfgs[cell%2])
			bank.Set(cell, s)
			sums[cell] = s
		}
		if step%10 == 0 || step > 390 {
			check(fmt.Sprintf("step %d", step))
		}
	}
	if found < 1000 || len(depths) < 20 {
		t.Fatalf("the searches found %d cells at %d distinct depths, want a test that exercises deep splits", found, len(depths))
	}
	for c := range sums {
		bank.Remove(c)
	}
	sums = map[int]*Summary{}
	check("all removed")
	if n := bank.Bytes(); n != 0 {
		t.Errorf("Bytes after removing every cell got %d, want 0 (empty groups freed)", n)
	}
}

// BenchmarkBankDepths times one search of a 200-block chain over 64, 256 and
// 1,024 cells whose summaries each hold 64k sampled hashes. Each of 4,096
// chains has its prefix in three cells at different depths, and every
// iteration searches the next chain, so the rows are mostly out of cache
// (the bank is far larger than the caches at 256 cells and more).
func BenchmarkBankDepths(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		b.Run(fmt.Sprintf("cells=%d", n), func(b *testing.B) {
			r := newRand(3)
			chains := make([][]blockhash.Hash, 4096)
			for i := range chains {
				chains[i] = randChain(r, 200)
			}
			holders := make([][]int, n)
			for i := range chains {
				for k := range 3 {
					c := (i*7 + k*131) % n
					holders[c] = append(holders[c], i)
				}
			}
			bank := NewBank()
			cfg := DefaultSummaryConfig()
			filler := randChain(r, 1<<16)
			for c := range n {
				bl := mustBuilder(b, cfg)
				for i, h := range filler {
					bl.Add(h^blockhash.Hash(c)*0x9E3779B97F4A7C15, 1+i%4*4)
				}
				for _, i := range holders[c] {
					for d := 1; d <= 20+(i+c)%180; d++ {
						bl.Add(chains[i][d-1], d)
					}
				}
				bank.Set(c, bl.Build())
			}
			var dst []CellDepth
			found := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				dst = bank.Depths(chains[i%len(chains)], dst[:0])
				found += len(dst)
			}
			if found < b.N {
				b.Fatalf("found %d cells in %d searches, want at least one each", found, b.N)
			}
		})
	}
}
