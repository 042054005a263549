package indexbench

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/index"
)

// Verify replays the whole timeline sequentially (no timing, no
// concurrency) into a fresh indexer of each factory and checks the queries:
// every query, whose own worker must get exactly the engine model's prefix
// hit, and for the second and later factories the same depth as the first
// factory for every pod; a Sampled factory (the slow baseline) is checked
// on an evenly spaced sample of verifySamples queries only.
// It returns the first disagreement. This is what makes the timed numbers
// mean something: the events and queries the benchmark feeds are the ones
// the engine produced, and the indexers answer them exactly.
func Verify(w *Workload, factories ...Factory) error {
	ixs := make([]Indexer, len(factories))
	ms := make([]Matcher, len(factories))
	for i, f := range factories {
		ix, err := f.New(w.Workers, 0)
		if err != nil {
			return err
		}
		defer ix.Close()
		ixs[i], ms[i] = ix, ix.NewMatcher()
	}
	cursor := make([]int, len(w.streams))
	stride := max(1, len(w.Chains)/verifySamples)
	for r, chain := range w.Chains {
		for i, m := range ms {
			if factories[i].Sampled && r%stride != 0 {
				continue
			}
			m.Match(chain)
			own := index.Slot(w.Worker[r])
			if got, want := m.Depth(own), int(w.Hit[r]); got != want {
				return fmt.Errorf("indexbench: verify %s: request %d worker %d: got depth %d, want the engine's hit %d",
					factories[i].Name, r, own, got, want)
			}
			if i == 0 {
				continue
			}
			for p := 0; p < w.Workers; p++ {
				s := index.Slot(p)
				if got, want := m.Depth(s), ms[0].Depth(s); got != want {
					return fmt.Errorf("indexbench: verify %s: request %d pod %d: got depth %d, want %d as %s",
						factories[i].Name, r, p, got, want, factories[0].Name)
				}
			}
		}
		// Apply this request's events (Removed before Stored, as built).
		for si := range w.streams {
			s := &w.streams[si]
			for cursor[si] < len(s.req) && int(s.req[cursor[si]]) == r {
				k := cursor[si]
				for _, ix := range ixs {
					ix.Apply(s.ops[s.start(k):s.end[k]])
				}
				cursor[si]++
			}
		}
	}
	want := w.DistinctFinal
	for i, ix := range ixs {
		if got := ix.Blocks(); got != want {
			return fmt.Errorf("indexbench: verify %s: got %d blocks at the end, want %d", factories[i].Name, got, want)
		}
	}
	return nil
}

// verifySamples is how many queries Verify checks on the second and later
// factories.
const verifySamples = 1000
