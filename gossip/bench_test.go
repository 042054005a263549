package gossip

import (
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// benchFixture is a cell summary of 1M offered hashes (depths 1..1000,
// stride 4, so about 250k sampled) plus a 1000-block chain held to depth 600.
type benchFixture struct {
	chain  []blockhash.Hash
	hashes []blockhash.Hash
	s1, s2 *Summary // two consecutive generations, 1% churn between them
}

var (
	fixtureOnce sync.Once
	fixture     benchFixture
)

func getFixture(b *testing.B) *benchFixture {
	fixtureOnce.Do(func() {
		r := newRand(99)
		f := &fixture
		f.chain = randChain(r, 1000)
		f.hashes = randChain(r, 1_000_000)
		bl := mustBuilder(b, DefaultSummaryConfig())
		build := func(skip int) *Summary {
			for i, h := range f.hashes {
				if skip > 0 && i%101 == 0 {
					continue
				}
				bl.Add(h, i%1000+1)
			}
			for d := 1; d <= 600; d++ {
				bl.Add(f.chain[d-1], d)
			}
			return bl.Build()
		}
		f.s1 = build(0)
		f.s2 = build(1)
	})
	return &fixture
}

func BenchmarkSummaryDepth1000(b *testing.B) {
	f := getFixture(b)
	if got := f.s1.Depth(f.chain); got < 600 || got >= 604 {
		b.Fatalf("Depth = %d, want 600..603", got)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		f.s1.Depth(f.chain)
	}
}

func BenchmarkBuild1M(b *testing.B) {
	f := getFixture(b)
	for _, tc := range []struct {
		name    string
		depthOf func(i int) int
	}{
		{"sampled-stride4", func(i int) int { return i%1000 + 1 }},
		{"depth-unknown", func(int) int { return 0 }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			bl := mustBuilder(b, DefaultSummaryConfig())
			b.ReportAllocs()
			var s *Summary
			for b.Loop() {
				for i, h := range f.hashes {
					bl.Add(h, tc.depthOf(i))
				}
				s = bl.Build()
			}
			b.ReportMetric(float64(s.SizeBytes()), "filter-bytes")
		})
	}
}

func BenchmarkSnapshotCodec(b *testing.B) {
	f := getFixture(b)
	pub, _ := NewPublisher("cell-1", 1, 0)
	pub.Publish(f.s1)
	snap := pub.Snapshot()
	enc := EncodeSnapshot(snap)
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			EncodeSnapshot(snap)
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, err := DecodeSnapshot(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDelta(b *testing.B) {
	f := getFixture(b)
	if f.s1.Params() != f.s2.Params() {
		b.Fatalf("fixture generations differ in params")
	}
	pub, _ := NewPublisher("cell-1", 1, 0)
	pub.Publish(f.s1)
	b.Run("diff", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			diffWords(f.s1, f.s2)
		}
	})
	pub.Publish(f.s2)
	c := pub.Since(1, 1)
	if c.Delta == nil {
		b.Fatalf("1%% churn did not travel as a delta")
	}
	enc, err := EncodeDelta(c.Delta)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(enc)), "delta-bytes")
	b.ReportMetric(float64(f.s1.SizeBytes()), "snapshot-bytes")
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodeDelta(c.Delta); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(enc)), "delta-bytes")
		b.ReportMetric(float64(f.s1.SizeBytes()), "snapshot-bytes")
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodeDelta(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apply", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			f.s1.withFlipped(c.Delta.Flipped, 0)
		}
	})
}
