package load

import (
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// chainOf makes a chain of chained hashes from a path of block ids: equal
// paths give equal hashes, and a hash names its whole prefix.
func chainOf(path []uint64) []blockhash.Hash {
	out := make([]blockhash.Hash, len(path))
	h := uint64(0x9e3779b97f4a7c15)
	for i, id := range path {
		h = (h^id)*0xbf58476d1ce4e5b9 + 1
		h ^= h >> 31
		out[i] = blockhash.Hash(h)
	}
	return out
}

// naivePrefix compares position by position.
func naivePrefix(a, b []blockhash.Hash) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// randomPath is a path that shares a random prefix with base.
func randomPath(r *rand.Rand, base []uint64) []uint64 {
	keep := 0
	if len(base) > 0 {
		keep = r.IntN(len(base) + 1)
	}
	out := append([]uint64(nil), base[:keep]...)
	for range r.IntN(6) {
		out = append(out, uint64(r.IntN(3)))
	}
	return out
}

// TestCommonPrefixMatchesNaive checks the binary search against the
// position-by-position comparison on random chains that share prefixes.
func TestCommonPrefixMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for i := range 5000 {
		a, b := chainOf(randomPath(r, base)), chainOf(randomPath(r, base))
		if got, want := commonPrefix(a, b), naivePrefix(a, b); got != want {
			t.Fatalf("case %d: commonPrefix(%d blocks, %d blocks) = %d, want %d", i, len(a), len(b), got, want)
		}
	}
}

// TestPrefillsDeepestMatchesNaive runs random Begin, End and Deepest
// calls against a plain list of what is in progress.
func TestPrefillsDeepestMatchesNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	pods := []string{"a", "b", "c"}
	p := NewPrefills()
	type entry struct {
		pod   string
		chain []blockhash.Hash
		from  int
		f     *Prefill
	}
	var live []entry
	for step := range 20000 {
		switch op := r.IntN(3); {
		case op == 0 || len(live) == 0:
			pod := pods[r.IntN(len(pods))]
			c := chainOf(randomPath(r, base))
			from := r.IntN(len(c) + 1)
			live = append(live, entry{pod, c, from, p.Begin(pod, c, from, time.Time{})})
		case op == 1:
			i := r.IntN(len(live))
			p.End(live[i].f)
			p.End(live[i].f) // idempotent
			select {
			case <-live[i].f.Done():
			default:
				t.Fatalf("step %d: Done not closed after End", step)
			}
			live = append(live[:i], live[i+1:]...)
		default:
			pod := pods[r.IntN(len(pods))]
			q := chainOf(randomPath(r, base))
			above := r.IntN(4)
			want := 0
			for _, e := range live {
				if e.pod == pod {
					want = max(want, naivePrefix(e.chain, q)-max(above, e.from))
				}
			}
			f, got := p.Deepest(pod, q, above)
			if got != want {
				t.Fatalf("step %d: Deepest(%s, above %d) gain = %d, want %d", step, pod, above, got, want)
			}
			if (f != nil) != (want > 0) {
				t.Fatalf("step %d: Deepest(%s, above %d) prefill %v with gain %d", step, pod, above, f, got)
			}
			if f != nil && (f.pod != pod || naivePrefix(f.chain, q)-max(above, f.From()) != got) {
				t.Fatalf("step %d: Deepest returned a prefill of pod %s gaining %d blocks, want pod %s gaining %d", step, f.pod, naivePrefix(f.chain, q)-max(above, f.From()), pod, got)
			}
		}
		n := 0
		for _, e := range live {
			if e.pod == "a" {
				n++
			}
		}
		if got := p.Len("a"); got != n {
			t.Fatalf("step %d: Len(a) = %d, want %d", step, got, n)
		}
	}
}

// TestPrefillsEndWakesWaiters checks that a waiter blocked on Done wakes
// when another goroutine ends the prefill, and that End of nil is safe.
func TestPrefillsEndWakesWaiters(t *testing.T) {
	p := NewPrefills()
	p.End(nil)
	f := p.Begin("a", chainOf([]uint64{1, 2}), 0, time.Time{})
	var wg sync.WaitGroup
	woke := make(chan struct{}, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-f.Done()
			woke <- struct{}{}
		}()
	}
	p.End(f)
	wg.Wait()
	if len(woke) != 4 {
		t.Fatalf("%d waiters woke, want 4", len(woke))
	}
	if got, d := p.Deepest("a", chainOf([]uint64{1, 2}), 0); got != nil || d != 0 {
		t.Fatalf("Deepest after End = %v, %d, want nil, 0", got, d)
	}
	select {
	case <-f.Done():
	case <-time.After(time.Second):
		t.Fatal("Done not closed")
	}
}

// BenchmarkPrefillsDeepest measures the lookup the cell makes before it
// sends a request: eight prompts in progress on the pod, 512-block chains
// sharing a 256-block prefix with the query.
func BenchmarkPrefillsDeepest(b *testing.B) {
	p := NewPrefills()
	path := make([]uint64, 512)
	for i := range path {
		path[i] = uint64(i)
	}
	q := chainOf(path)
	for i := range 8 {
		other := append([]uint64(nil), path[:256]...)
		for j := 256; j < 512; j++ {
			other = append(other, uint64(1000*(i+1)+j))
		}
		p.Begin("pod", chainOf(other), 0, time.Time{})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, d := p.Deepest("pod", q, 0); d != 256 {
			b.Fatalf("gain %d, want 256", d)
		}
	}
}

// BenchmarkPrefillsBeginEnd measures one request's registration and end.
func BenchmarkPrefillsBeginEnd(b *testing.B) {
	p := NewPrefills()
	c := chainOf([]uint64{1, 2, 3})
	for range 8 {
		p.Begin("pod", c, 0, time.Time{})
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.End(p.Begin("pod", c, 0, time.Time{}))
	}
}
