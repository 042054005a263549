package natsjs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/nats-io/nats.go/jetstream"
)

// GapGiver is the optional capability of a Sink to abandon the repair of a
// holder's sequence gap; *events.Applier has it. GiveUp clears the holder
// (its view lost events) and accepts its next batch as a new baseline; it
// reports false if the holder was not waiting for a replay.
type GapGiver interface {
	GiveUp(holder string) bool
}

var _ GapGiver = (*events.Applier)(nil)

// handle decodes, applies and settles one message. It runs on the Run
// goroutine only, one message at a time, which is what keeps each
// publisher's batches in delivery order; c.batch is reused from message to
// message.
func (c *Consumer) handle(ctx context.Context, msg jetstream.Msg) {
	c.counters.Messages.Add(1)
	md, _ := msg.Metadata()
	if md != nil && md.NumDelivered > 1 {
		c.counters.Redeliveries.Add(1)
	}
	defer c.noteProgress(md)

	meta, err := ParseHeaders(msg.Headers())
	if err != nil {
		c.poison(msg, md, ReasonHeader, err)
		return
	}
	b := &c.batch
	if err := vllmwire.DecodePayload(msg.Data(), b, c.cfg.Limits); err != nil {
		c.poison(msg, md, vllmwire.Reason(err), err)
		return
	}
	if meta.DPRank >= 0 {
		if b.DPRank >= 0 && b.DPRank != meta.DPRank {
			c.poison(msg, md, ReasonHeader, errRankMismatch{header: meta.DPRank, payload: b.DPRank})
			return
		}
		b.DPRank = meta.DPRank
	}
	b.Pod, b.Model, b.Seq = meta.Pod, meta.Model, meta.Seq

	err = c.sink.ApplyBatch(ctx, b)
	var gap *events.GapError
	if errors.As(err, &gap) {
		err = c.onGap(ctx, msg, md, b, gap)
		if err == errSentBack {
			return
		}
	}
	c.settle(ctx, msg, md, b, err)
	if ctx.Err() == nil {
		c.noteHandled(md)
	}
}

// errSentBack tells handle that onGap sent the message back.
var errSentBack = errors.New("natsjs: sent back")

// onGap decides about a batch that revealed a Kv-Seq gap. JetStream stored
// whatever the publisher published and delivers it in stream order while at
// most one message is unacknowledged (MaxAckPending 1): the missing batches
// are then not in the stream, and never will be; the publisher lost them
// before publishing (or the stream's limits discarded them unread). Waiting
// cannot repair that, and re-reading the stream finds nothing more, so the
// consumer gives the gap up at once: the applier clears the holder (its view
// lost events) and the batch is applied as the holder's new baseline. The
// holder is degraded for the duration of this call only.
//
// With MaxAckPending above 1 a redelivered message can arrive after later
// ones, so the missing batches may still come: the message is sent back
// (NakWithDelay GapDelay) until it was delivered GapRetries times, and only
// then is the gap given up. It returns the error of the second ApplyBatch,
// or errSentBack.
func (c *Consumer) onGap(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, b *events.Batch, gap *events.GapError) error {
	if c.cfg.MaxAckPending > 1 && md != nil && md.NumDelivered <= uint64(c.cfg.GapRetries) {
		c.nak(msg, c.cfg.GapDelay)
		return errSentBack
	}
	g, ok := c.sink.(GapGiver)
	if !ok {
		return gap // the sink cannot abandon gaps: drop the batch
	}
	if !g.GiveUp(gap.Holder) {
		return gap
	}
	c.counters.GapGiveUps.Add(1)
	c.rl.warn("natsjs: publisher lost batches; holder cleared and resumed",
		"holder", gap.Holder, "from", gap.From, "to", gap.To)
	return c.sink.ApplyBatch(ctx, b)
}

// settle acknowledges msg according to what the sink said about its batch:
// applied or a duplicate (a redelivery of an applied batch): Ack; dropped
// for good: Term; the context ended: Nak, so the next instance gets it at
// once; any other error (the sink failed): Nak after NakDelay.
func (c *Consumer) settle(ctx context.Context, msg jetstream.Msg, md *jetstream.MsgMetadata, b *events.Batch, err error) {
	if err == nil {
		c.counters.Applied.Add(1)
		c.ack(msg)
		return
	}
	if ctx.Err() != nil {
		c.nak(msg, 0)
		return
	}
	if r, ok := events.ReasonOf(err); ok {
		c.counters.drop(r.String())
		if r == events.ReasonDuplicate {
			c.ack(msg)
			return
		}
		c.rl.warn("natsjs: batch dropped", "reason", r.String(), "holder", b.Holder(),
			"seq", b.Seq, "stream_seq", streamSeq(md), "err", err)
		c.term(msg)
		return
	}
	c.rl.warn("natsjs: sink failed; message sent back", "holder", b.Holder(), "seq", b.Seq,
		"stream_seq", streamSeq(md), "err", err)
	c.nak(msg, c.cfg.NakDelay)
}

// poison counts, logs (at a bounded rate) and terminates a message that
// cannot decode: delivering it again would fail again.
func (c *Consumer) poison(msg jetstream.Msg, md *jetstream.MsgMetadata, label string, err error) {
	c.counters.drop(label)
	c.rl.warn("natsjs: undecodable message terminated", "reason", label,
		"subject", msg.Subject(), "stream_seq", streamSeq(md), "err", err)
	c.term(msg)
}

// ack, nak and term send one acknowledgement and count it.
func (c *Consumer) ack(msg jetstream.Msg) {
	if err := msg.Ack(); err != nil {
		c.counters.AckErrors.Add(1)
		return
	}
	c.counters.Acks.Add(1)
}

func (c *Consumer) nak(msg jetstream.Msg, delay time.Duration) {
	var err error
	if delay > 0 {
		err = msg.NakWithDelay(delay)
	} else {
		err = msg.Nak()
	}
	if err != nil {
		c.counters.AckErrors.Add(1)
		return
	}
	c.counters.Naks.Add(1)
}

func (c *Consumer) term(msg jetstream.Msg) {
	if err := msg.Term(); err != nil {
		c.counters.AckErrors.Add(1)
		return
	}
	c.counters.Terms.Add(1)
}

// streamSeq returns the message's stream sequence for logs (0 if unknown).
func streamSeq(md *jetstream.MsgMetadata) uint64 {
	if md == nil {
		return 0
	}
	return md.Sequence.Stream
}

// errRankMismatch reports a Kv-Dp-Rank header that contradicts the payload.
type errRankMismatch struct{ header, payload int }

func (e errRankMismatch) Error() string {
	return fmt.Sprintf("natsjs: bad header: %s %d but payload rank %d", HeaderDPRank, e.header, e.payload)
}

func (e errRankMismatch) Unwrap() error { return ErrHeader }
