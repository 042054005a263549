package zmqsub

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cell/events"
)

// stream is what one goroutine keeps about the publishers it feeds to the
// sink: each holder's sequence state, the batches it decodes into, and how
// to reach replay sockets. A dial socket has one stream; the Bind socket
// has one per publishing pod, each on its own goroutine, so that a replay
// holds up only its own pod. Only the owning goroutine touches a stream.
type stream struct {
	s *Subscriber
	// ep is the dialed endpoint (its replay socket and identity); zero for
	// a Bind socket's stream.
	ep   Endpoint
	bind bool
	// gen counts connections (dial mode); a holder first seen in an older
	// generation is caught up again when it next speaks.
	gen     uint64
	holders map[holderKey]*holderState
	live    events.Batch // the batch live messages decode into
	rb      events.Batch // the batch replayed messages decode into
	// nholders counts the socket's holders, shared by its streams.
	nholders *atomic.Int64
}

// holderKey names a publisher within a stream without allocating: the
// decoder keeps Batch.Pod's string while the pod does not change.
type holderKey struct {
	pod  string
	rank int
}

// holderState is what a stream remembers of one publisher.
type holderState struct {
	// gen is the connection generation the holder was last caught up in.
	gen uint64
	// live is the last live sequence number seen in gen, if hasLive.
	live    uint64
	hasLive bool
	// model is the model the holder's batches were last applied under.
	model string
	// resumed is set when a connection's catch-up resumed the holder from
	// a snapshot at resumedAt (see firstContact).
	resumed   bool
	resumedAt uint64
}

// newStream returns the stream of a dial endpoint (bind false) or of one
// pod of the Bind socket.
func newStream(s *Subscriber, ep Endpoint, bind bool, nholders *atomic.Int64) *stream {
	st := &stream{s: s, ep: ep, bind: bind, holders: make(map[holderKey]*holderState), nholders: nholders}
	if bind {
		st.gen = 1 // connections are invisible: one generation
	}
	return st
}

// state returns b's holder state, creating it (nil past maxHolders).
func (st *stream) state(b *events.Batch) *holderState {
	k := holderKey{b.Pod, b.DPRank}
	h := st.holders[k]
	if h == nil && st.nholders.Load() < maxHolders {
		h = &holderState{}
		st.holders[k] = h
		st.nholders.Add(1)
	}
	return h
}

// stamp gives b the socket's rank when the engine did not say one.
func (st *stream) stamp(b *events.Batch) {
	if b.DPRank < 0 && st.ep.HasRank {
		b.DPRank = st.ep.Rank
	}
}

// handle applies one live batch, catching the holder up first when this
// connection has not heard from it yet, or when its sequence went backwards.
//
// The rules, in order:
//
//   - First message of a holder in this connection (a cell that just
//     started, or a reconnection after which the engine may have restarted),
//     numbered above 0: replay from seq 0 before applying it. A fresh
//     applier takes the first replayed batch as its baseline and so rebuilds
//     the pod's cache from what the engine still buffers; a known holder
//     sees seq 0 again, which the applier treats as a restart (clear, then
//     rebuild), correct whether or not the engine really restarted.
//   - A live number at or below the last live number (but not 0, which the
//     applier recognises itself): live messages of one connection only go
//     up, so the engine restarted and its seq 0 was lost. Replay from 0; if
//     the replay does not start at 0, tell the applier of the restart with
//     an empty batch numbered 0.
//   - Then apply; on a gap, replay the missing range and apply again; if
//     the gap remains, give it up (the holder is cleared) and apply the
//     batch as the new baseline.
func (st *stream) handle(ctx context.Context, b *events.Batch) {
	h := st.state(b)
	if h != nil {
		switch {
		case h.gen != st.gen:
			h.gen, h.hasLive = st.gen, false
			st.firstContact(ctx, b, h)
		case h.model != b.Model:
			// Caught up at connection under the endpoint's model (none, so
			// the sink's default), but the live topic names another: file
			// the engine's buffer again under the right one.
			st.s.counters.ModelChanges.Add(1)
			st.s.sink.ResetHolder(b.Pod, b.DPRank)
			st.catchUp(ctx, b, false)
		case h.hasLive && b.Seq <= h.live && b.Seq != 0:
			st.s.counters.Restarts.Add(1)
			st.catchUp(ctx, b, true)
		}
		h.live, h.hasLive, h.model = b.Seq, true, b.Model
		h.resumed = false // first contact is over
	}
	st.apply(ctx, b)
}

// replayEndpoint returns the replay socket of b's publisher, or "".
func (st *stream) replayEndpoint(b *events.Batch) string {
	if !st.bind {
		return st.ep.Replay
	}
	return st.s.cfg.replayFor(b.Pod, b.DPRank)
}

// fetch replays b's publisher from seq from into st.rb, calling each with
// every batch in order (see Subscriber.fetchReplay).
func (st *stream) fetch(ctx context.Context, ep string, from uint64, b *events.Batch, each func(*events.Batch)) error {
	return st.s.fetchReplay(ctx, ep, from, b.Pod, b.Model, &st.rb, func(r *events.Batch) {
		st.stamp(r)
		each(r)
	})
}

// apply applies b, repairing a gap it reveals.
func (st *stream) apply(ctx context.Context, b *events.Batch) {
	var gap *events.GapError
	if !errors.As(st.s.sink.ApplyBatch(ctx, b), &gap) {
		return
	}
	if ep := st.replayEndpoint(b); ep != "" {
		err := st.fetch(ctx, ep, gap.From, b, func(r *events.Batch) { st.applyReplayed(ctx, r) })
		if err != nil {
			st.s.logLimited("replay:"+ep, "zmqsub: replay failed", "holder", gap.Holder, "endpoint", ep, "from", gap.From, "to", gap.To, "err", err)
		}
		if !errors.As(st.s.sink.ApplyBatch(ctx, b), &gap) {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	st.giveUp(gap)
	_ = st.s.sink.ApplyBatch(ctx, b)
}

// applyReplayed applies a replayed batch. A gap here means the engine no
// longer buffers what is missing: it is given up and the batch becomes the
// holder's new baseline. Duplicates are dropped by the applier.
func (st *stream) applyReplayed(ctx context.Context, r *events.Batch) {
	if h := st.state(r); h != nil {
		if h.gen != st.gen {
			h.gen, h.hasLive = st.gen, false
		}
		h.model = r.Model
	}
	var gap *events.GapError
	if !errors.As(st.s.sink.ApplyBatch(ctx, r), &gap) {
		return
	}
	st.giveUp(gap)
	_ = st.s.sink.ApplyBatch(ctx, r)
}

// giveUp abandons gap: the applier clears the holder.
func (st *stream) giveUp(gap *events.GapError) {
	if st.s.sink.GiveUp(gap.Holder) {
		st.s.counters.GiveUps.Add(1)
		st.s.logLimited("giveup", "zmqsub: gave up a sequence gap; holder cleared", "holder", gap.Holder, "from", gap.From, "to", gap.To)
	}
}

// catchUp replays everything b's publisher still buffers, from seq 0,
// before b is applied. With restart set (the engine restarted and its seq 0
// was lost) a replay that does not begin with seq 0 is preceded by an empty
// batch numbered 0, which makes the applier clear the holder.
func (st *stream) catchUp(ctx context.Context, b *events.Batch, restart bool) {
	ep := st.replayEndpoint(b)
	sawFirst := false
	markRestart := func(r *events.Batch) {
		if sawFirst {
			return
		}
		sawFirst = true
		if restart && (r == nil || r.Seq != 0) {
			_ = st.s.sink.ApplyBatch(ctx, &events.Batch{Pod: b.Pod, Model: b.Model, DPRank: b.DPRank, Seq: 0, TS: b.TS})
		}
	}
	if ep != "" {
		err := st.fetch(ctx, ep, 0, b, func(r *events.Batch) {
			markRestart(r)
			st.applyReplayed(ctx, r)
		})
		if err != nil {
			st.s.logLimited("replay:"+ep, "zmqsub: catch-up replay failed", "pod", b.Pod, "endpoint", ep, "err", err)
		}
	}
	markRestart(nil)
}

// catchUpEndpoint replays everything the endpoint's publisher buffers right
// after a connection (after the snapshot's number for a holder restored
// from one), for endpoints that name their pod: the replayed
// batches carry their rank, and each holder met is marked caught up for
// this connection, under the endpoint's model (none: the sink's default).
// If the live topic later names another model, handle files the buffer
// again under it.
func (st *stream) catchUpEndpoint(ctx context.Context) {
	b := &events.Batch{Pod: st.ep.Pod, Model: st.ep.Model}
	from := st.endpointStart()
	err := st.fetch(ctx, st.ep.Replay, from, b, func(r *events.Batch) { st.applyReplayed(ctx, r) })
	if err != nil {
		st.s.logLimited("replay:"+st.ep.Replay, "zmqsub: catch-up replay failed", "pod", st.ep.Pod, "endpoint", st.ep.Replay, "err", err)
	}
}
