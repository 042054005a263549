package global

import (
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
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

	// The summaries again, transposed in a gossip.Bank, so one search tests
	// every cell at once. A cell's bank key is its own for as long as the
	// directory lives (keys are never reused, so an older snapshot's index
	// never names another cell's summary); banked is what the bank holds
	// under each key; depths estimates through the bank for the cached views.
	bank    *gossip.Bank
	keys    map[string]int
	nextKey int
	banked  map[int]*gossip.Summary
	depths  DepthsFunc
}

// DepthsFunc appends to dst every cell whose summary may hold a prefix of
// chain, with its estimated depth (what Summary.Depth says), Cell being an
// index into the views it came with; it must be safe for concurrent use.
type DepthsFunc func(chain []blockhash.Hash, dst []gossip.CellDepth) []gossip.CellDepth

// An IndexedDirectory also estimates every cell's depth of a chain at once
// (an inverted index over the summaries), which the search uses instead of
// testing each cell's summary in turn: at a thousand cells that is the
// difference between about 10 us and 250 us or more per decision.
type IndexedDirectory interface {
	Directory
	// CellsAndDepths returns Cells() and the estimator of those views.
	CellsAndDepths() ([]CellView, DepthsFunc)
}

// bankIndex maps a bank's keys to the indices of one snapshot's views.
type bankIndex struct {
	bank *gossip.Bank
	view map[int]int
}

// depths implements DepthsFunc for the snapshot.
func (x *bankIndex) depths(chain []blockhash.Hash, dst []gossip.CellDepth) []gossip.CellDepth {
	start := len(dst)
	dst = x.bank.Depths(chain, dst)
	out := dst[:start]
	for _, d := range dst[start:] {
		if i, ok := x.view[d.Cell]; ok {
			out = append(out, gossip.CellDepth{Cell: i, Depth: d.Depth})
		}
	}
	return out
}

// AgeRefresh bounds how stale the summary ages of cached views may be.
const AgeRefresh = 100 * time.Millisecond

// NewGossipDirectory returns the directory of a gossip table.
func NewGossipDirectory(t *gossip.Table) *GossipDirectory { return &GossipDirectory{Table: t} }

// Cells implements Directory: every cell the table knows, alive or not
// (dead cells stay out of every decision; they are listed for operators).
func (d *GossipDirectory) Cells() []CellView {
	vs, _ := d.CellsAndDepths()
	return vs
}

// CellsAndDepths implements IndexedDirectory.
func (d *GossipDirectory) CellsAndDepths() ([]CellView, DepthsFunc) {
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
		return d.cached, d.depths
	}
	d.src, d.srcLen, d.at = first, len(entries), now
	d.cached = d.convert(entries, now)
	d.depths = d.rebank(entries).depths
	return d.cached, d.depths
}

// rebank brings the bank to the entries' summaries (a summary replaced
// costs the bits it changed) and returns the index of this snapshot.
func (d *GossipDirectory) rebank(entries []gossip.Entry) *bankIndex {
	if d.bank == nil {
		d.bank, d.keys, d.banked = gossip.NewBank(), map[string]int{}, map[int]*gossip.Summary{}
	}
	x := &bankIndex{bank: d.bank, view: make(map[int]int, len(entries))}
	for i := range entries {
		e := &entries[i]
		k, ok := d.keys[e.Cell]
		if !ok {
			k = d.nextKey
			d.nextKey++
			d.keys[e.Cell] = k
		}
		x.view[k] = i
		if d.banked[k] != e.Summary {
			d.bank.Set(k, e.Summary) // nil removes
			d.banked[k] = e.Summary
		}
	}
	for id, k := range d.keys {
		if _, ok := x.view[k]; !ok { // the cell left the table
			d.bank.Remove(k)
			delete(d.banked, k)
			delete(d.keys, id)
		}
	}
	return x
}

func (d *GossipDirectory) convert(entries []gossip.Entry, now time.Time) []CellView {
	out := make([]CellView, 0, len(entries))
	for i := range entries {
		e := &entries[i]
		v := CellView{
			ID: e.Cell, HTTPAddr: e.Member.HTTPAddr, GRPCAddr: e.Member.GRPCAddr, GatewayAddr: e.Member.GatewayAddr,
			Alive:      e.Member.State == gossip.StateAlive,
			SummaryGen: e.Gen,
			Load:       CellLoad(e.Load),
			WaitsAt:    e.BandsUpdatedAt,
		}
		for _, ep := range e.Endpoints {
			if ep.Member.State == gossip.StateAlive && ep.Member.HTTPAddr != "" {
				v.Endpoints = append(v.Endpoints, Endpoint{Name: ep.Member.Name, HTTPAddr: ep.Member.HTTPAddr, GRPCAddr: ep.Member.GRPCAddr,
					GatewayAddr: ep.Member.GatewayAddr})
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
