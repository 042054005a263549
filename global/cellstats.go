package global

import (
	"sync"
	"time"
)

// maxModelsSeen bounds the model names cellStats keeps per cell: names
// come from clients, so the set must not grow with what they send.
const maxModelsSeen = 16

// cellCounters are what the data plane learned of one cell since start.
type cellCounters struct {
	// Probes counts the probes sent to the cell; ProbeErrors those that
	// failed or timed out.
	Probes, ProbeErrors uint64
	// RTTSum is the sum of the answered probes' round trips; LastRTT the
	// latest one.
	RTTSum, LastRTT time.Duration
	// Handoffs counts the requests the cell answered.
	Handoffs uint64
	// PromptTokens, PredictedTokens and RealisedTokens are, over the
	// requests the cell answered with usage, the prompt tokens, those the
	// probe answer predicted cached and those the pods reported cached.
	PromptTokens, PredictedTokens, RealisedTokens uint64
	// Models are model names (at most maxModelsSeen) requests handed to
	// the cell named.
	Models []string
}

// MeanRTT is the answered probes' mean round trip (0 without one).
func (c *cellCounters) MeanRTT() time.Duration {
	if n := c.Probes - c.ProbeErrors; n > 0 {
		return c.RTTSum / time.Duration(n)
	}
	return 0
}

// cellStats counts, per cell, the probes and their round trips and the
// predicted against realised cache hits: the per-cell figures of the
// status page, which the Prometheus metrics keep for the tier as a whole.
// It is safe for concurrent use; each update takes one short lock.
type cellStats struct {
	mu sync.Mutex
	m  map[string]*cellCounters
}

func newCellStats() *cellStats { return &cellStats{m: map[string]*cellCounters{}} }

// get returns the counters of cell, creating them; s.mu must be held.
func (s *cellStats) get(cell string) *cellCounters {
	c := s.m[cell]
	if c == nil {
		c = &cellCounters{}
		s.m[cell] = c
	}
	return c
}

// probed records a probe of cell: its round trip, or its error.
func (s *cellStats) probed(cell string, rtt time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(cell)
	c.Probes++
	if err != nil {
		c.ProbeErrors++
		return
	}
	c.RTTSum += rtt
	c.LastRTT = rtt
}

// served records a request the cell answered, for model, with the pods'
// usage (prompt and cached tokens; hasUsage false when the answer carried
// none) and the tokens its probe predicted cached.
func (s *cellStats) served(cell, model string, hasUsage bool, prompt, predicted, realised int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.get(cell)
	c.Handoffs++
	if hasUsage {
		c.PromptTokens += uint64(max(prompt, 0))
		c.PredictedTokens += uint64(max(predicted, 0))
		c.RealisedTokens += uint64(max(realised, 0))
	}
	if model == "" || len(c.Models) >= maxModelsSeen {
		return
	}
	for _, m := range c.Models {
		if m == model {
			return
		}
	}
	c.Models = append(c.Models, model)
}

// snapshot copies the counters of the cells keep names, and forgets the
// others (cells that left the directory), so the map is bounded by the
// directory.
func (s *cellStats) snapshot(keep map[string]bool) map[string]cellCounters {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]cellCounters, len(s.m))
	for id, c := range s.m {
		if !keep[id] {
			delete(s.m, id)
			continue
		}
		cc := *c
		cc.Models = append([]string(nil), c.Models...)
		out[id] = cc
	}
	return out
}
