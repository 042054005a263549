package load

import (
	"math/rand/v2"
	"sync"
	"testing"
)

func TestTrackerLifecycle(t *testing.T) {
	tr := NewTracker()
	a := tr.Start("p", 10, 6, "tmpl")
	b := tr.Start("p", 4, 4, "")
	if got := tr.Usage("p"); got.Requests != 2 || got.Blocks != 14 || got.PrefillBlocks != 10 || got.Templates["tmpl"] != 1 {
		t.Fatalf("after start: %+v", got)
	}
	tr.FirstToken(a)
	tr.FirstToken(a) // idempotent
	if got := tr.Usage("p"); got.PrefillBlocks != 4 {
		t.Fatalf("prefill after first token = %d, want 4", got.PrefillBlocks)
	}
	tr.Done(b) // cancelled before its first token
	tr.Done(b)
	if got := tr.Usage("p"); got.Requests != 1 || got.Blocks != 10 || got.PrefillBlocks != 0 {
		t.Fatalf("after cancel: %+v", got)
	}
	tr.Done(a)
	if got := tr.Usage("p"); got.Requests != 0 || got.Blocks != 0 || got.Templates != nil {
		t.Fatalf("after done: %+v", got)
	}
}

// TestTrackerMatchesReference runs random lifecycles from several
// goroutines and checks the totals against a sum kept per ticket.
func TestTrackerMatchesReference(t *testing.T) {
	tr := NewTracker()
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			var open []*Ticket
			for i := 0; i < 2000; i++ {
				switch rng.IntN(3) {
				case 0:
					open = append(open, tr.Start([]string{"a", "b"}[rng.IntN(2)], 1+rng.IntN(9), rng.IntN(5), ""))
				case 1:
					if len(open) > 0 {
						tr.FirstToken(open[rng.IntN(len(open))])
					}
				case 2:
					if len(open) > 0 {
						k := rng.IntN(len(open))
						tr.Done(open[k])
						open = append(open[:k], open[k+1:]...)
					}
				}
			}
			for _, tk := range open {
				tr.Done(tk)
			}
		}(g)
	}
	wg.Wait()
	for _, p := range []string{"a", "b"} {
		if u := tr.Usage(p); u.Requests != 0 || u.Blocks != 0 || u.PrefillBlocks != 0 {
			t.Fatalf("pod %s not back to zero: %+v", p, u)
		}
	}
}
