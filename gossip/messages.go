package gossip

import "github.com/RoaringBitmap/roaring/v2"

// Header announces a cell's latest summary generation and load. It is small
// (well under 200 bytes) so it travels in memberlist's UDP gossip; receivers
// compare (Epoch, Gen) with what they hold and fetch the bits when behind.
type Header struct {
	// Cell is the publishing cell's id.
	Cell string
	// Node is the memberlist name of the replica that published it (the
	// cell's replicas each publish their own generations; see Table). ""
	// stands for the cell's first endpoint.
	Node string
	// Epoch identifies one run of the cell's publisher; it grows across
	// restarts (the publisher's start time in nanoseconds), so (Epoch, Gen)
	// orders generations even when a restarted cell counts again from 1.
	Epoch uint64
	// Gen is the latest summary generation, 0 when none is published yet.
	Gen uint64
	// Seq orders headers within an epoch: it grows with every header,
	// including load-only updates that keep Gen.
	Seq uint64
	// Load is the cell's load when the header was made.
	Load Load
	// Params is the shape of generation Gen's summary (zero when Gen is 0).
	Params Params
	// Elements is the number of sampled hashes in generation Gen.
	Elements uint64
}

// Snapshot carries one whole summary generation.
type Snapshot struct {
	// Cell is the publishing cell's id.
	Cell string
	// Node is the memberlist name of the replica that published it (the
	// cell's replicas each publish their own generations; see Table). ""
	// stands for the cell's first endpoint.
	Node string
	// Epoch is the publisher's epoch (see Header.Epoch).
	Epoch uint64
	// Gen is the generation, at least 1.
	Gen uint64
	// Params is the summary's shape.
	Params Params
	// Elements is the number of sampled hashes inserted.
	Elements uint64
	// Bits holds the filter, Params.M/64 words, bit i in word i/64 at
	// position i%64. A Snapshot made by a Publisher shares this slice with
	// an immutable Summary: do not modify it.
	Bits []uint64
}

// Summary returns the summary the snapshot carries (a copy of its bits).
func (s *Snapshot) Summary() *Summary {
	return summaryFromWords(s.Params, s.Bits, s.Elements)
}

// Delta carries the change from generation FromGen to ToGen of one epoch as
// the set of filter bit positions that flipped. Both generations have the
// same Params.
type Delta struct {
	// Cell is the publishing cell's id.
	Cell string
	// Node is the memberlist name of the replica that published it (the
	// cell's replicas each publish their own generations; see Table). ""
	// stands for the cell's first endpoint.
	Node string
	// Epoch is the publisher's epoch (see Header.Epoch).
	Epoch uint64
	// FromGen is the generation the delta applies to.
	FromGen uint64
	// ToGen is the generation the delta produces; ToGen > FromGen.
	ToGen uint64
	// Params is the shape of both generations.
	Params Params
	// Elements is the number of sampled hashes in generation ToGen.
	Elements uint64
	// Flipped holds the positions (below Params.M) whose bit differs
	// between the two generations.
	Flipped *roaring.Bitmap
}

// FetchRequest asks a cell for its latest summary, saying which generation
// the requester holds so that the cell can answer with a Delta instead of a
// Snapshot. It travels over memberlist's reliable (TCP) user messages and the
// answer comes back the same way.
type FetchRequest struct {
	// From is the requesting node's memberlist name, where the answer goes.
	From string
	// Cell is the cell asked for.
	Cell string
	// Epoch and Gen name the generation the requester holds; Gen 0 means
	// none, and asks for a Snapshot.
	Epoch uint64
	Gen   uint64
}

// CellState is what a cell hands over in memberlist's push/pull exchange: its
// latest header and, once it has published, its latest snapshot.
type CellState struct {
	// Header is the cell's latest header.
	Header Header
	// Snapshot is the latest generation, nil before the first Publish.
	Snapshot *Snapshot
}
