package global

import (
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/gossip"
)

// GossipDirectory is the cell directory of a globald: the gossip table of
// the pool it joined. It converts the table's snapshot once per change of
// the table (and refreshes summary ages at most every AgeRefresh), so a
// decision does not rebuild 64 views.
type GossipDirectory struct {
	Table *gossip.Table
	// Now is the clock for summary ages (nil: time.Now).
	Now func() time.Time

	mu     sync.Mutex
	src    *gossip.Entry // first entry of the converted snapshot (identity)
	srcLen int
	at     time.Time
	cached []CellView
}

// AgeRefresh bounds how stale the summary ages of cached views may be.
const AgeRefresh = 100 * time.Millisecond

// NewGossipDirectory returns the directory of a gossip table.
func NewGossipDirectory(t *gossip.Table) *GossipDirectory { return &GossipDirectory{Table: t} }

// Cells implements Directory: every cell the table knows, alive or not
// (dead cells stay out of every decision; they are listed for operators).
func (d *GossipDirectory) Cells() []CellView {
	now := time.Now()
	if d.Now != nil {
		now = d.Now()
	}
	entries := d.Table.Snapshot()
	d.mu.Lock()
	defer d.mu.Unlock()
	var first *gossip.Entry
	if len(entries) > 0 {
		first = &entries[0]
	}
	if d.cached != nil && first == d.src && len(entries) == d.srcLen && now.Sub(d.at) < AgeRefresh {
		return d.cached
	}
	d.src, d.srcLen, d.at = first, len(entries), now
	d.cached = d.convert(entries, now)
	return d.cached
}

func (d *GossipDirectory) convert(entries []gossip.Entry, now time.Time) []CellView {
	out := make([]CellView, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		v := CellView{
			ID: e.Cell, HTTPAddr: e.Member.HTTPAddr, GRPCAddr: e.Member.GRPCAddr,
			Alive:      e.Member.State == gossip.StateAlive,
			SummaryGen: e.Gen,
			Load: CellLoad{ActiveRequests: e.Load.ActiveRequests, ActiveBlocks: e.Load.ActiveBlocks,
				FreeBlocks: e.Load.FreeBlocks, Pods: e.Load.Pods, LeastPodBlocks: e.Load.LeastPodBlocks,
				Lightest: e.Load.Lightest, NLightest: e.Load.NLightest},
		}
		for _, ep := range e.Endpoints {
			if ep.Member.State == gossip.StateAlive && ep.Member.HTTPAddr != "" {
				v.Endpoints = append(v.Endpoints, Endpoint{Name: ep.Member.Name, HTTPAddr: ep.Member.HTTPAddr, GRPCAddr: ep.Member.GRPCAddr})
			}
		}
		if e.Member.ModelsKnown {
			v.Models = e.Member.Models
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
