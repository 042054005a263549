package index

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// benchLearner is benchIndex with a learner attached.
func benchLearner(b *testing.B, blocks int) (*Index, *Learner, [][]BlockHash) {
	b.Helper()
	ix, chains := benchIndex(b, blocks)
	l, err := NewLearner(ix, DefaultLearnConfig())
	if err != nil {
		b.Fatal(err)
	}
	return ix, l, chains
}

// BenchmarkMatchLearnerIdle is BenchmarkMatch with a learner attached that
// holds nothing: the cost of the attachment for a cell without learned
// blocks (a nil check and one bitmap test).
func BenchmarkMatchLearnerIdle(b *testing.B) {
	ix, _, chains := benchLearner(b, 1<<20)
	var r MatchResult
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ix.Match(chains[i%len(chains)], &r)
	}
}

// BenchmarkMatchSpeculative is BenchmarkMatch when every chain was just
// routed to two pods (a speculative tail each); "split" also asks where
// the exact depth of the chain's best pods ends (SplitLearned), "split-all"
// asks it for every matched pod (all 256 hold the shared system prompt).
func BenchmarkMatchSpeculative(b *testing.B) {
	ix, l, chains := benchLearner(b, 1<<20)
	rng := rand.New(rand.NewPCG(3, 4))
	now := time.Now()
	for _, c := range chains {
		for k := 0; k < 2; k++ {
			l.Speculate(Slot(rng.IntN(MaxPods)), c, now)
		}
	}
	for _, mode := range []string{"match", "split", "split-all"} {
		b.Run(mode, func(b *testing.B) {
			var r MatchResult
			b.ReportAllocs()
			learned := 0
			for i := 0; i < b.N; i++ {
				c := chains[i%len(chains)]
				ix.Match(c, &r)
				switch mode {
				case "split":
					g := r.Groups()
					ix.SplitLearned(c, &r, g[len(g)-1].Pods)
				case "split-all":
					ix.SplitLearned(c, &r, r.Matched())
				}
				learned += r.Learned().Count()
			}
			b.ReportMetric(float64(learned)/float64(b.N), "learned-pods/op")
		})
	}
}

// BenchmarkApplyStoreLearner is BenchmarkApplyStore with a learner
// attached: every exact batch takes its slot's learner lock.
func BenchmarkApplyStoreLearner(b *testing.B) {
	ix, _, _ := benchLearner(b, 1<<20)
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

// BenchmarkSpeculate is the routing path's write: a request of 32 shared
// and 480 new blocks routed to a pod, its speculative entries written, and
// (every 64 requests) the expired ones swept.
func BenchmarkSpeculate(b *testing.B) {
	ix, l, _ := benchLearner(b, 1<<16)
	system := chainOf(32, 1<<30)
	chains := make([][]BlockHash, 64)
	for i := range chains {
		chains[i] = append(append([]BlockHash(nil), system...), chainOf(480, uint64(1000+i))...)
	}
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Millisecond)
		l.Speculate(Slot(i%MaxPods), chains[i%len(chains)], now)
		if i%64 == 63 {
			l.Expire(now.Add(-l.cfg.SpeculativeTTL / 2))
		}
	}
	b.StopTimer()
	_ = ix
}

// BenchmarkTouch is an approximate pod's first token: a 512-block chain it
// mostly holds already is refreshed, and a new 16-block tail learned.
func BenchmarkTouch(b *testing.B) {
	ix, l, _ := benchLearner(b, 1<<16)
	s, _ := ix.SlotOf("pod-0")
	l.SetApproximate(s, true, 4096)
	base := chainOf(496, 77)
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(time.Millisecond)
		c := append(base[:496:496], chainOf(16, uint64(5000+i))...)
		l.Touch(s, c, now)
	}
}

// BenchmarkMatchOverlay measures the design not taken: learned blocks in a
// side index merged at query time, which costs a second search per query.
// The overlay holds the speculative entries of BenchmarkMatchSpeculative;
// each query matches the exact index and the overlay.
func BenchmarkMatchOverlay(b *testing.B) {
	ix, chains := benchIndex(b, 1<<20)
	overlay, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(overlay.Close)
	for i := 0; i < MaxPods; i++ {
		overlay.Register("pod-" + itoa(i))
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range chains {
		for k := 0; k < 2; k++ {
			overlay.Store(Slot(rng.IntN(MaxPods)), TierGPU, c)
		}
	}
	var r, o MatchResult
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := chains[i%len(chains)]
		ix.Match(c, &r)
		overlay.Match(c, &o)
	}
}

// BenchmarkLearnedMemory reports the learner's heap bytes per learned
// block: the heap growth of one approximate slot learning 1M blocks (in
// 512-block chains) less that of an index storing the same blocks exactly.
func BenchmarkLearnedMemory(b *testing.B) {
	chains := make([][]BlockHash, 2048)
	for j := range chains {
		chains[j] = chainOf(512, uint64(j+1))
	}
	grow := func(learn bool) (uint64, int) {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		ix, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		defer ix.Close()
		s, _ := ix.Register("pod")
		var l *Learner
		if learn {
			l, _ = NewLearner(ix, LearnConfig{SpeculativeTTL: time.Second, ApproximateTTL: time.Hour, MaxBlocksPerSlot: 1 << 21})
			l.SetApproximate(s, true, 0)
		}
		for _, c := range chains {
			if learn {
				l.Touch(s, c, time.Now())
			} else {
				ix.Store(s, TierGPU, c)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(ix)
		runtime.KeepAlive(l)
		return after.HeapAlloc - before.HeapAlloc, int(ix.Stats().Blocks)
	}
	for i := 0; i < b.N; i++ {
		exact, n := grow(false)
		learned, _ := grow(true)
		b.ReportMetric(float64(int64(learned)-int64(exact))/float64(n), "bytes/block")
	}
}

// BenchmarkStoredDepth is what a routed request asks of its pod before it
// goes (the tracker's pending prefill, the prefix wait): how much of its
// 512-block chain an approximate pod has stored, when it holds 496 blocks
// stored and the 16 blocks of a prefill in progress ("speculative tail",
// a bisection) or the whole chain stored ("stored", one lookup).
func BenchmarkStoredDepth(b *testing.B) {
	ix, l, _ := benchLearner(b, 1<<16)
	s, _ := ix.SlotOf("pod-0")
	l.SetApproximate(s, true, 4096)
	now := time.Now()
	stored := chainOf(512, 77)
	l.Touch(s, stored, now)
	tail := append(stored[:496:496], chainOf(16, 91)...)
	l.Speculate(s, tail, now)
	for _, tc := range []struct {
		name  string
		chain []BlockHash
		want  int
	}{{"speculative tail", tail, 496}, {"stored", stored, 512}} {
		b.Run(tc.name, func(b *testing.B) {
			var r MatchResult
			ix.Match(tc.chain, &r)
			if got := ix.StoredDepth(tc.chain, &r, s); got != tc.want {
				b.Fatalf("StoredDepth = %d, want %d", got, tc.want)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				ix.StoredDepth(tc.chain, &r, s)
			}
		})
	}
}
