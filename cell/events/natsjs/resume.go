package natsjs

import (
	"errors"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"
)

// position is what a Consumer knows of its place in the stream, for
// snapshots (package cell/snapshot).
type position struct {
	// startAfter, when not 0, is the stream sequence a snapshot was taken
	// at: the durable consumer is recreated to deliver from the next one.
	startAfter uint64
	// handled is the last stream sequence handled in order (MaxAckPending
	// 1 only).
	handled atomic.Uint64
}

// ErrRunning is returned by ResumeAfter once Run has started.
var ErrRunning = errors.New("natsjs: consumer already running")

// ResumeAfter makes the Consumer's first attach recreate the durable
// consumer so that it delivers from stream sequence seq+1 on: the cell was
// restored from a snapshot taken when seq was the last message handled.
// The durable's own position is no use then: messages handled after the
// snapshot were acknowledged, but their effect is not in the snapshot. The
// applier drops what the restored holders already have as duplicates. If
// the stream no longer holds seq+1, delivery starts at its first message
// and the applier sees (and gives up) the gap. Call it before Run; seq 0
// changes nothing.
func (c *Consumer) ResumeAfter(seq uint64) error {
	if c.running.Load() || c.attached {
		return ErrRunning
	}
	c.pos.startAfter = seq
	return nil
}

// Position returns the last stream sequence the Consumer handled, every
// earlier one handled too, or 0 when it cannot say: with MaxAckPending
// above 1 a message sent back may still be due below the highest handled
// one, so only MaxAckPending 1 reports a position. A snapshot records it
// to resume from (ResumeAfter). Safe for concurrent use.
func (c *Consumer) Position() uint64 {
	if c.cfg.MaxAckPending != 1 {
		return 0
	}
	return c.pos.handled.Load()
}

// noteHandled records md's stream sequence as handled.
func (c *Consumer) noteHandled(md *jetstream.MsgMetadata) {
	if md != nil && md.Sequence.Stream > c.pos.handled.Load() {
		c.pos.handled.Store(md.Sequence.Stream)
	}
}

// deliverFrom sets where a new durable consumer starts: after the
// snapshot's position when there is one, else the stream's first message.
func (c *Consumer) deliverFrom(cc *jetstream.ConsumerConfig) {
	if c.pos.startAfter == 0 {
		return
	}
	cc.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
	cc.OptStartSeq = c.pos.startAfter + 1
}
