package indexbench

import (
	"testing"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// BenchmarkMatch times one Match of a real trace chain (768 blocks on
// average) against the final state of the small trace's replay, for each
// indexer (cell/index in both layouts).
func BenchmarkMatch(b *testing.B) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.BlocksPerWorker = 2048
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ops := w.FinalOps()
	for _, f := range []Factory{CellIndex, PagedIndex, NaiveIndex} {
		b.Run(f.Name, func(b *testing.B) {
			ix, err := f.New(w.Workers, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			for off := 0; off < len(ops); off += loadBatch {
				ix.Apply(ops[off:min(off+loadBatch, len(ops))])
			}
			m := ix.NewMatcher()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				m.Match(w.Chains[i%len(w.Chains)])
			}
		})
	}
}

// BenchmarkApplyStored times storing the final state of the small trace's
// replay into a fresh indexer (table growth included), in 512-op batches;
// ns/op is per batch.
func BenchmarkApplyStored(b *testing.B) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		b.Fatal(err)
	}
	w, err := BuildWorkload(recs, DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	ops := w.FinalOps()
	for _, f := range []Factory{CellIndex, PagedIndex, NaiveIndex} {
		b.Run(f.Name, func(b *testing.B) {
			b.ReportAllocs()
			var ix Indexer
			off := len(ops)
			for b.Loop() {
				if off >= len(ops) {
					b.StopTimer()
					if ix != nil {
						ix.Close()
					}
					ix, err = f.New(w.Workers, 0)
					if err != nil {
						b.Fatal(err)
					}
					off = 0
					b.StartTimer()
				}
				end := min(off+512, len(ops))
				ix.Apply(ops[off:end])
				off = end
			}
			if ix != nil {
				ix.Close()
			}
			b.ReportMetric(512, "ops/batch")
		})
	}
}

// BenchmarkMatchTrace times one Match of the committed trace's first 2,000
// requests (loadtest index --quick's workload) against the final state of
// their replay at 16-token blocks, with the tables sized for the fleet as
// celld sizes them: an index too large for the caches, for each layout.
// The lookups and rounds per query are reported beside the time.
func BenchmarkMatchTrace(b *testing.B) {
	recs, err := trace.ReadFile("../../"+DefaultTrace, 2000)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	ops := w.FinalOps()
	for _, f := range []Factory{CellIndex, PagedIndex} {
		b.Run(f.Name, func(b *testing.B) {
			ix, err := f.New(w.Workers, cfg.expectedBlocks())
			if err != nil {
				b.Fatal(err)
			}
			defer ix.Close()
			for off := 0; off < len(ops); off += loadBatch {
				ix.Apply(ops[off:min(off+loadBatch, len(ops))])
			}
			m := ix.NewMatcher()
			wc := m.(workCounter)
			var lookups, rounds int
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				m.Match(w.Chains[i%len(w.Chains)])
				lookups += wc.Lookups()
				rounds += wc.Rounds()
			}
			b.ReportMetric(float64(lookups)/float64(b.N), "reads/op")
			b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
		})
	}
}
