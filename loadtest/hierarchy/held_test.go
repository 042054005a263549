package hierarchy

import (
	"math/rand/v2"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// TestHeldSetAgainstReference drives heldSet and a naive map of counts with
// the same random stores and removes and compares them after every step.
func TestHeldSetAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	s := newHeldSet()
	type ref struct{ count, depth int }
	want := map[blockhash.Hash]ref{}
	for step := range 20000 {
		h := blockhash.Hash(1 + rng.IntN(300))
		depth := int(h%37) + 1 // a hash always has the same depth
		if rng.IntN(3) > 0 {
			s.store(h, depth)
			r := want[h]
			want[h] = ref{r.count + 1, depth}
		} else {
			s.remove(h)
			if r, ok := want[h]; ok {
				if r.count == 1 {
					delete(want, h)
				} else {
					want[h] = ref{r.count - 1, depth}
				}
			}
		}
		if step%97 != 0 {
			continue
		}
		if s.Len() != len(want) {
			t.Fatalf("step %d: got Len %d, want %d", step, s.Len(), len(want))
		}
		seen := map[blockhash.Hash]bool{}
		s.forEach(func(h blockhash.Hash, d int) {
			r, ok := want[h]
			if !ok || r.depth != d || seen[h] {
				t.Fatalf("step %d: forEach got %v at depth %d (seen %v), want it held once at depth %d (held %v)", step, h, d, seen[h], r.depth, ok)
			}
			seen[h] = true
			if got, ok := s.depth(h); !ok || got != d {
				t.Fatalf("step %d: depth(%v) got %d %v, want %d true", step, h, got, ok, d)
			}
		})
	}
}
