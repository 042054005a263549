package global

import (
	"time"

	"github.com/cellrouter/cellrouter/gossip"
)

// GossipDirectory is the cell directory of a globald: the gossip table of
// the pool it joined.
type GossipDirectory struct {
	Table *gossip.Table
	// Now is the clock for summary ages (nil: time.Now).
	Now func() time.Time
}

// Cells implements Directory: every cell the table knows, alive or not
// (dead cells stay out of every decision; they are listed for operators).
func (d GossipDirectory) Cells() []CellView {
	now := time.Now()
	if d.Now != nil {
		now = d.Now()
	}
	entries := d.Table.Snapshot()
	out := make([]CellView, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		v := CellView{
			ID: e.Cell, HTTPAddr: e.Member.HTTPAddr, GRPCAddr: e.Member.GRPCAddr,
			Alive:      e.Member.State == gossip.StateAlive,
			SummaryGen: e.Gen,
			Load: CellLoad{ActiveRequests: e.Load.ActiveRequests, ActiveBlocks: e.Load.ActiveBlocks,
				FreeBlocks: e.Load.FreeBlocks, Pods: e.Load.Pods},
		}
		if e.Summary != nil {
			v.Summary = e.Summary
			v.SummaryBytes = e.Summary.SizeBytes()
			v.SummaryAge = e.Age(now)
		}
		out = append(out, v)
	}
	return out
}
