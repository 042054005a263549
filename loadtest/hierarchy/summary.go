package hierarchy

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
)

// summarizer publishes one cell's summaries the way a cell does: every
// generation it rebuilds a Bloom summary from every block the cell holds
// (gossip.Builder, sampled by depth), numbers it with a gossip.Publisher,
// and accounts for what a global replica one generation behind would
// receive: the header announcing the generation (gossip.EncodeHeader) plus
// the catch-up the publisher answers with (Publisher.Since), encoded with
// the real codec: a roaring-bitmap delta (gossip.EncodeDelta) when the
// filter kept its shape and the delta is smaller, else a snapshot
// (gossip.EncodeSnapshot).
type summarizer struct {
	b   *gossip.Builder
	pub *gossip.Publisher
	seq uint64

	// Totals over the generations published.
	gens, deltas, snapshots int
	wireBytes               int64
	summaryBytes            int64
	lastBytes               int
}

// newSummarizer returns the summarizer of cell id.
func newSummarizer(id string, cfg gossip.SummaryConfig) (*summarizer, error) {
	b, err := gossip.NewBuilder(cfg)
	if err != nil {
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	pub, err := gossip.NewPublisher(id, 1, 0)
	if err != nil {
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	return &summarizer{b: b, pub: pub}, nil
}

// publish builds and publishes the next generation from the cell's held
// blocks and load, and returns the new summary.
func (s *summarizer) publish(held *heldSet, load global.CellLoad) (*gossip.Summary, error) {
	held.forEach(func(h blockhash.Hash, depth int) { s.b.Add(h, depth) })
	sum := s.b.Build()
	gen := s.pub.Publish(sum)
	s.seq++
	hdr := gossip.EncodeHeader(&gossip.Header{
		Cell: s.pub.Cell(), Epoch: s.pub.Epoch(), Gen: gen, Seq: s.seq,
		Load:   gossip.Load(load),
		Params: sum.Params(), Elements: sum.Elements(),
	})
	n := len(hdr)
	c := s.pub.Since(s.pub.Epoch(), gen-1)
	switch {
	case c.Delta != nil:
		raw, err := gossip.EncodeDelta(c.Delta)
		if err != nil {
			return nil, fmt.Errorf("hierarchy: %w", err)
		}
		n += len(raw)
		s.deltas++
	case c.Snapshot != nil:
		n += len(gossip.EncodeSnapshot(c.Snapshot))
		s.snapshots++
	}
	s.gens++
	s.wireBytes += int64(n)
	s.lastBytes = sum.SizeBytes()
	s.summaryBytes += int64(s.lastBytes)
	return sum, nil
}

// heartbeat accounts for a generation in which the cell's blocks did not
// change: only the header with the new load travels. It returns its bytes.
func (s *summarizer) heartbeat(load global.CellLoad) int {
	s.seq++
	cur := s.pub.Current()
	hdr := gossip.EncodeHeader(&gossip.Header{
		Cell: s.pub.Cell(), Epoch: s.pub.Epoch(), Gen: s.pub.Gen(), Seq: s.seq,
		Load:   gossip.Load(load),
		Params: cur.Params(), Elements: cur.Elements(),
	})
	s.wireBytes += int64(len(hdr))
	return len(hdr)
}
