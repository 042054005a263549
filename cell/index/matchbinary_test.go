package index

import "testing"

// matchBinary is the straightforward form of Match: one binary search per
// distinct depth, one lookup at a time. It is kept to benchmark Match's
// round-based bisection against, side by side, and as a second check.
func (ix *Index) matchBinary(chain []BlockHash, r *MatchResult) {
	r.alive = ix.Alive()
	r.matched = HostBitmap{}
	r.n, r.lookups, r.rounds = 0, 0, 0
	n := len(chain)
	if n == 0 || r.alive.IsEmpty() {
		return
	}
	cur := ix.lookup(chain[0], r).And(r.alive)
	lo := 0
	for {
		set := cur
		if set.IsEmpty() {
			break
		}
		hi := n
		var atHi HostBitmap
		for l := lo; hi-l > 1; {
			mid := (l + hi) / 2
			h := ix.lookup(chain[mid], r)
			r.rounds++
			if set.SubsetOf(h) {
				l = mid
			} else {
				hi, atHi = mid, h
			}
		}
		cur = atHi.And(set)
		r.addGroup(set.AndNot(cur), hi)
		if hi == n {
			break
		}
		lo = hi
	}
}

func BenchmarkMatchVsBinary(b *testing.B) {
	ix, chains := benchIndex(b, 1<<22)
	for _, alg := range []struct {
		name string
		f    func([]BlockHash, *MatchResult)
	}{{"binary", ix.matchBinary}, {"rounds", ix.Match}} {
		b.Run(alg.name, func(b *testing.B) {
			var r MatchResult
			lookups, rounds := 0, 0
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				alg.f(chains[(i*7919)%len(chains)], &r)
				lookups += r.Lookups()
				rounds += r.Rounds()
			}
			b.ReportMetric(float64(lookups)/float64(b.N), "lookups/op")
			b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
		})
	}
}

func TestMatchBinaryAgrees(t *testing.T) {
	ix := newTestIndex(t, DefaultConfig())
	for i := 0; i < 20; i++ {
		ix.Register("p" + itoa(i))
	}
	base := chainOf(300, 9)
	for i := 0; i < 20; i++ {
		ix.Store(Slot(i), TierGPU, base[:15*i+3])
	}
	var a, b MatchResult
	for _, n := range []int{1, 2, 3, 17, 100, 299, 300} {
		ix.Match(base[:n], &a)
		ix.matchBinary(base[:n], &b)
		for s := 0; s < 20; s++ {
			if a.Depth(Slot(s)) != b.Depth(Slot(s)) {
				t.Fatalf("chain %d pod %d: Match %d, binary %d", n, s, a.Depth(Slot(s)), b.Depth(Slot(s)))
			}
		}
	}
}

// BenchmarkArity compares the number of parts a round splits each open
// interval into, on the same large index.
func BenchmarkArity(b *testing.B) {
	ix, chains := benchIndex(b, 1<<22)
	for _, a := range []int{2, 3, 4, 6, 8} {
		b.Run(itoa(a), func(b *testing.B) {
			defer func(old int) { searchArity = old }(searchArity)
			searchArity = a
			var r MatchResult
			lookups, rounds := 0, 0
			for i := 0; i < b.N; i++ {
				ix.Match(chains[(i*7919)%len(chains)], &r)
				lookups += r.Lookups()
				rounds += r.Rounds()
			}
			b.ReportMetric(float64(lookups)/float64(b.N), "lookups/op")
			b.ReportMetric(float64(rounds)/float64(b.N), "rounds/op")
		})
	}
}
