package cell

import (
	"github.com/cellrouter/cellrouter/cell/index"
)

// Each pod's share of the index is bounded (events.max_index_blocks_per_pod,
// pods[].max_index_blocks, from kv_blocks by default): past it the pod's
// least recently stored or matched blocks are evicted (package events,
// evict.go), so one event stream cannot fill the index for every pod.
// Evictions are counted per pod and reason
// (cellrouter_events_evicted_blocks_total, and in the cell state).

// touchMatched tells the applier that a request routed to the pod in slot
// s uses the blocks of hashes its events stored there, so that they are
// the last its bound evicts. It never waits (see events.Applier.Touch).
func (c *Cell) touchMatched(s index.Slot, hashes []index.BlockHash, match *index.MatchResult) {
	if match == nil || match.Depth(s) == 0 {
		return
	}
	// The match's depth may end in speculative blocks: the exact part is
	// what the pod's events stored.
	c.ix.SplitLearned(hashes, match, index.BitmapOf(s))
	d := min(match.ExactDepth(s), len(hashes))
	if d == 0 {
		return
	}
	if id := c.ix.PodID(s); id != "" {
		c.applier.Touch(id, hashes[d-1])
	}
}
