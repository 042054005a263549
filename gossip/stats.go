package gossip

import "sync/atomic"

// Stats counts a node's summary traffic since Start, for metrics.
type Stats struct {
	// HeadersApplied counts headers that reached a known cell's entry.
	HeadersApplied uint64
	// SnapshotsApplied and DeltasApplied count summaries that changed an
	// entry, by how they arrived (push/pull states count as snapshots).
	SnapshotsApplied uint64
	DeltasApplied    uint64
	// Gaps counts deltas that did not apply and led to a snapshot request.
	Gaps uint64
	// FetchesSent counts fetch requests sent; FetchesServed counts answers
	// (delta or snapshot) a cell sent.
	FetchesSent   uint64
	FetchesServed uint64
	// Dropped counts messages that did not decode.
	Dropped uint64
	// PeerSent and PeerReceived count peer messages (see SendPeers).
	PeerSent, PeerReceived uint64
}

// stats holds the live counters behind Stats.
type stats struct {
	headers, snapshots, deltas, gaps, fetchesSent, fetchesServed, dropped atomic.Uint64
	peerSent, peerReceived                                                atomic.Uint64
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	s := &n.stats
	return Stats{
		HeadersApplied: s.headers.Load(), SnapshotsApplied: s.snapshots.Load(), DeltasApplied: s.deltas.Load(),
		Gaps: s.gaps.Load(), FetchesSent: s.fetchesSent.Load(), FetchesServed: s.fetchesServed.Load(), Dropped: s.dropped.Load(),
		PeerSent: s.peerSent.Load(), PeerReceived: s.peerReceived.Load(),
	}
}
