package natsjs

import (
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cell/events"
)

// ReasonHeader is the drop label of a message whose headers ParseHeaders
// rejected, or whose Kv-Dp-Rank disagrees with the payload's rank.
const ReasonHeader = "header"

// decodeLabels are the drop labels of messages that did not decode: the
// header label and every label vllmwire.Reason returns.
var decodeLabels = []string{
	ReasonHeader, "frame_count", "bad_seq", "topic", "msgpack",
	"unknown_tag", "bad_event", "too_large", "other",
}

// Counters are the transport's counters: plain atomics, safe for concurrent
// use, read by the daemon's metrics exporter. The applier keeps its own
// (events.Counters) about what the batches did to the index.
type Counters struct {
	// Messages counts messages received, redeliveries included.
	Messages atomic.Uint64
	// Applied counts messages whose batch the sink applied.
	Applied atomic.Uint64
	// Redeliveries counts messages received more than once.
	Redeliveries atomic.Uint64
	// Acks, Naks and Terms count the acknowledgements sent: Ack after a
	// batch was applied or dropped as a duplicate, Nak to have a message
	// delivered again, Term for a message that will never apply (poison).
	Acks, Naks, Terms atomic.Uint64
	// GapGiveUps counts Kv-Seq gaps the consumer abandoned (the publisher
	// lost batches): the holder was cleared and the batch applied.
	GapGiveUps atomic.Uint64
	// AckErrors counts acknowledgements that could not be sent.
	AckErrors atomic.Uint64
	// Attaches and AttachErrors count successful and failed attaches to
	// the stream (connect, stream, consumer).
	Attaches, AttachErrors atomic.Uint64

	dropped map[string]*atomic.Uint64
}

// newCounters returns counters with every drop label present.
func newCounters() *Counters {
	c := &Counters{dropped: make(map[string]*atomic.Uint64)}
	for _, l := range DropLabels() {
		c.dropped[l] = new(atomic.Uint64)
	}
	return c
}

// DecodeLabels returns the labels of messages dropped before the sink saw
// them: ReasonHeader and vllmwire.Reason's labels.
func DecodeLabels() []string { return append([]string(nil), decodeLabels...) }

// DropLabels returns every label Dropped knows, in a fixed order: the
// decode labels (ReasonHeader and vllmwire.Reason's labels), then the
// applier's batch drop reasons (events.DropReason).
func DropLabels() []string {
	out := append([]string(nil), decodeLabels...)
	for _, r := range events.DropReasons() {
		out = append(out, r.String())
	}
	return out
}

// Dropped returns the number of messages dropped under label (0 for an
// unknown label). A message is dropped when it did not decode (terminated)
// or when the sink dropped its batch (a duplicate is acknowledged, other
// drops are terminated).
func (c *Counters) Dropped(label string) uint64 {
	if n := c.dropped[label]; n != nil {
		return n.Load()
	}
	return 0
}

// drop counts one message dropped under label.
func (c *Counters) drop(label string) {
	if n := c.dropped[label]; n != nil {
		n.Add(1)
		return
	}
	c.dropped["other"].Add(1)
}
