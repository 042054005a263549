package global

import (
	"time"

	"github.com/cellrouter/cellrouter/cell/blockhash"
)

// Estimator estimates how many leading blocks of a chain a cell may hold:
// a gossiped summary. It must be safe for concurrent use.
type Estimator interface {
	Depth(chain []blockhash.Hash) int
}

// CellLoad is a cell's load as it gossips it. LeastPodBlocks is the active
// blocks of its least loaded pod, the load term of the cheapest pod the
// cell could offer a request that holds none of its prefix.
type CellLoad struct {
	ActiveRequests, ActiveBlocks, FreeBlocks, Pods int
	LeastPodBlocks                                 int
}

// Routed updates the load after the global tier sent a request of blocks
// blocks to the cell, whose probe answered with a pick of pickLoad active
// blocks: the cell's load grows, and when the pick was (as far as the
// gossip tells) its least loaded pod, that pod's load grows too, so the
// next searches before the next gossip do not all count on the same idle
// pod. Another pod as idle may exist; the probe then finds it.
func (l *CellLoad) Routed(pickLoad, blocks int) {
	l.ActiveRequests++
	l.ActiveBlocks += blocks
	l.FreeBlocks = max(0, l.FreeBlocks-blocks)
	if pickLoad <= l.LeastPodBlocks {
		l.LeastPodBlocks = pickLoad + blocks
	}
}

// CellView is what the global router knows of one cell when it decides.
type CellView struct {
	// ID names the cell; HTTPAddr takes requests; GRPCAddr takes probes.
	ID, HTTPAddr, GRPCAddr string
	// Alive is memberlist's view; Draining is the operator's.
	Alive, Draining bool
	// Summary is the cell's latest summary (nil until one arrived).
	Summary Estimator
	// SummaryGen and SummaryAge say how fresh the summary is.
	SummaryGen uint64
	SummaryAge time.Duration
	// SummaryBytes is the summary's size.
	SummaryBytes int
	// Load rides along with the summary.
	Load CellLoad
	// Models lists every model the cell serves, nil when the cell does not
	// know (see Router.ModelServed).
	Models ModelSet
}

// usable reports whether the cell may take new requests.
func (v *CellView) usable() bool { return v.Alive && !v.Draining && v.HTTPAddr != "" }

// Directory is the source of cell views: the gossip table in globald, a
// fixed list in tests. Cells returns a snapshot that nobody modifies (the
// router copies it before marking draining cells), so a directory may hand
// out the same slice until its contents change.
type Directory interface {
	Cells() []CellView
}

// StaticDirectory is a fixed list of cells.
type StaticDirectory []CellView

// Cells implements Directory.
func (d StaticDirectory) Cells() []CellView { return d }
