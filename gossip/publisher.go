package gossip

import (
	"fmt"

	"github.com/RoaringBitmap/roaring/v2"
)

// DefaultHistory is how many recent deltas a Publisher keeps by default.
const DefaultHistory = 8

// Publisher is the cell side of summary generations: it numbers the
// summaries a cell publishes and keeps the last few deltas, so that it can
// bring a peer holding any recent generation up to date with one Delta (the
// XOR of the deltas in between), or with a Snapshot when the peer is too far
// behind, on another epoch, or when the delta would be larger than the
// snapshot.
//
// A Publisher is a pure state machine with no goroutines or clock; it is not
// safe for concurrent use (Node guards its Publisher with a mutex).
type Publisher struct {
	cell    string
	epoch   uint64
	gen     uint64
	cur     *Summary
	keep    int
	history []step // history[i] turns generation history[i].to-1 into history[i].to
}

// step is the delta into generation to.
type step struct {
	to      uint64
	flipped *roaring.Bitmap
	size    uint64 // serialised size of flipped
}

// NewPublisher returns a publisher for cell in the given epoch (which should
// grow across restarts of the cell, for example its start time in
// nanoseconds) keeping up to keep deltas (DefaultHistory when keep <= 0).
func NewPublisher(cell string, epoch uint64, keep int) (*Publisher, error) {
	if cell == "" || len(cell) > MaxCellIDLen {
		return nil, fmt.Errorf("gossip: publisher: cell id %q is empty or longer than %d bytes", cell, MaxCellIDLen)
	}
	if keep <= 0 {
		keep = DefaultHistory
	}
	return &Publisher{cell: cell, epoch: epoch, keep: keep}, nil
}

// Cell returns the cell id.
func (p *Publisher) Cell() string { return p.cell }

// Epoch returns the epoch.
func (p *Publisher) Epoch() uint64 { return p.epoch }

// Gen returns the latest generation, 0 before the first Publish.
func (p *Publisher) Gen() uint64 { return p.gen }

// Current returns the latest summary, nil before the first Publish.
func (p *Publisher) Current() *Summary { return p.cur }

// Publish makes s the next generation and returns its number. s must not be
// modified afterwards (Summaries are immutable in this package's API). When
// s has the same Params as the previous generation, the delta between them
// joins the history; otherwise the history is cleared, since no delta spans
// a change of filter shape.
func (p *Publisher) Publish(s *Summary) uint64 {
	if p.cur != nil && p.cur.params == s.params {
		fl := diffWords(p.cur, s)
		p.history = append(p.history, step{to: p.gen + 1, flipped: fl, size: fl.GetSerializedSizeInBytes()})
		if len(p.history) > p.keep {
			p.history = append(p.history[:0], p.history[len(p.history)-p.keep:]...)
		}
	} else {
		p.history = p.history[:0]
	}
	p.gen++
	p.cur = s
	return p.gen
}

// Snapshot returns the latest generation as a Snapshot sharing the summary's
// bits, or nil before the first Publish.
func (p *Publisher) Snapshot() *Snapshot {
	if p.cur == nil {
		return nil
	}
	return &Snapshot{
		Cell: p.cell, Epoch: p.epoch, Gen: p.gen,
		Params: p.cur.params, Elements: p.cur.elements, Bits: p.cur.words(),
	}
}

// Catchup is the answer to a peer that holds some generation: exactly one of
// Delta and Snapshot is set, or neither when the peer is up to date or
// nothing is published.
type Catchup struct {
	Delta    *Delta
	Snapshot *Snapshot
}

// Since returns what brings a peer holding generation gen of epoch up to the
// latest generation: nothing if it is current, a Delta if the history covers
// gen and the delta's serialised form is smaller than the snapshot's bits,
// else a Snapshot. gen 0 (or another epoch) always gets a Snapshot.
func (p *Publisher) Since(epoch, gen uint64) Catchup {
	if p.cur == nil {
		return Catchup{}
	}
	if epoch == p.epoch && gen == p.gen {
		return Catchup{}
	}
	if epoch == p.epoch && gen > 0 && gen < p.gen {
		if d := p.delta(gen); d != nil {
			return Catchup{Delta: d}
		}
	}
	return Catchup{Snapshot: p.Snapshot()}
}

// delta composes the history from gen to the latest generation, or returns
// nil when the history does not reach back to gen or the result is not
// smaller than a snapshot.
func (p *Publisher) delta(gen uint64) *Delta {
	need := int(p.gen - gen)
	if need > len(p.history) {
		return nil
	}
	steps := p.history[len(p.history)-need:]
	snapBytes := p.cur.params.M / 8
	var fl *roaring.Bitmap
	if len(steps) == 1 {
		fl = steps[0].flipped
		if steps[0].size >= snapBytes {
			return nil
		}
	} else {
		fl = steps[0].flipped.Clone()
		for _, s := range steps[1:] {
			fl.Xor(s.flipped)
		}
		fl.RunOptimize()
		if fl.GetSerializedSizeInBytes() >= snapBytes {
			return nil
		}
	}
	return &Delta{
		Cell: p.cell, Epoch: p.epoch, FromGen: gen, ToGen: p.gen,
		Params: p.cur.params, Elements: p.cur.elements, Flipped: fl,
	}
}
