package zmqsub

import (
	"context"
	"errors"

	"github.com/cellrouter/cellrouter/cell/events"
)

// holderKey names a publisher within a socket without allocating: the
// decoder keeps Batch.Pod's string while the pod does not change.
type holderKey struct {
	pod  string
	rank int
}

// holderState is what a loop remembers of one publisher.
type holderState struct {
	// gen is the connection generation the holder was last caught up in.
	gen uint64
	// live is the last live sequence number seen in gen, if hasLive.
	live    uint64
	hasLive bool
}

// state returns b's holder state, creating it (nil past maxHolders).
func (l *loop) state(b *events.Batch) *holderState {
	k := holderKey{b.Pod, b.DPRank}
	st := l.holders[k]
	if st == nil && len(l.holders) < maxHolders {
		st = &holderState{}
		l.holders[k] = st
		l.nholders.Store(int64(len(l.holders)))
	}
	return st
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
func (l *loop) handle(ctx context.Context, b *events.Batch) {
	st := l.state(b)
	if st != nil {
		switch {
		case st.gen != l.gen:
			st.gen, st.hasLive = l.gen, false
			if b.Seq > 0 {
				l.catchUp(ctx, b, false)
			}
		case st.hasLive && b.Seq <= st.live && b.Seq != 0:
			l.s.counters.Restarts.Add(1)
			l.catchUp(ctx, b, true)
		}
		st.live, st.hasLive = b.Seq, true
	}
	l.apply(ctx, b)
}

// replayEndpoint returns the replay socket of pod, or "".
func (l *loop) replayEndpoint(pod string) string {
	if !l.bind {
		return l.ep.Replay
	}
	return l.s.cfg.replayFor(pod)
}

// apply applies b, repairing a gap it reveals.
func (l *loop) apply(ctx context.Context, b *events.Batch) {
	var gap *events.GapError
	if !errors.As(l.s.sink.ApplyBatch(ctx, b), &gap) {
		return
	}
	if ep := l.replayEndpoint(b.Pod); ep != "" {
		err := l.s.fetchReplay(ctx, ep, gap.From, b.Pod, b.Model, &l.rb, func(r *events.Batch) { l.applyReplayed(ctx, r) })
		if err != nil {
			l.s.logLimited("replay:"+ep, "zmqsub: replay failed", "holder", gap.Holder, "endpoint", ep, "from", gap.From, "to", gap.To, "err", err)
		}
		if !errors.As(l.s.sink.ApplyBatch(ctx, b), &gap) {
			return
		}
	}
	if ctx.Err() != nil {
		return
	}
	l.giveUp(gap)
	_ = l.s.sink.ApplyBatch(ctx, b)
}

// applyReplayed applies a replayed batch. A gap here means the engine no
// longer buffers what is missing: it is given up and the batch becomes the
// holder's new baseline. Duplicates are dropped by the applier.
func (l *loop) applyReplayed(ctx context.Context, r *events.Batch) {
	if st := l.state(r); st != nil && st.gen != l.gen {
		st.gen, st.hasLive = l.gen, false
	}
	var gap *events.GapError
	if !errors.As(l.s.sink.ApplyBatch(ctx, r), &gap) {
		return
	}
	l.giveUp(gap)
	_ = l.s.sink.ApplyBatch(ctx, r)
}

// giveUp abandons gap: the applier clears the holder.
func (l *loop) giveUp(gap *events.GapError) {
	if l.s.sink.GiveUp(gap.Holder) {
		l.s.counters.GiveUps.Add(1)
		l.s.logLimited("giveup", "zmqsub: gave up a sequence gap; holder cleared", "holder", gap.Holder, "from", gap.From, "to", gap.To)
	}
}

// catchUp replays everything b's publisher still buffers, from seq 0,
// before b is applied. With restart set (the engine restarted and its seq 0
// was lost) a replay that does not begin with seq 0 is preceded by an empty
// batch numbered 0, which makes the applier clear the holder.
func (l *loop) catchUp(ctx context.Context, b *events.Batch, restart bool) {
	ep := l.replayEndpoint(b.Pod)
	sawFirst := false
	markRestart := func(r *events.Batch) {
		if sawFirst {
			return
		}
		sawFirst = true
		if restart && (r == nil || r.Seq != 0) {
			_ = l.s.sink.ApplyBatch(ctx, &events.Batch{Pod: b.Pod, Model: b.Model, DPRank: b.DPRank, Seq: 0, TS: b.TS})
		}
	}
	if ep != "" {
		err := l.s.fetchReplay(ctx, ep, 0, b.Pod, b.Model, &l.rb, func(r *events.Batch) {
			markRestart(r)
			l.applyReplayed(ctx, r)
		})
		if err != nil {
			l.s.logLimited("replay:"+ep, "zmqsub: catch-up replay failed", "pod", b.Pod, "endpoint", ep, "err", err)
		}
	}
	markRestart(nil)
}

// catchUpEndpoint replays everything the endpoint's publisher buffers right
// after a connection, for endpoints that name their pod (and model): the
// replayed batches carry their rank, and each holder met is marked caught
// up for this connection.
func (l *loop) catchUpEndpoint(ctx context.Context) {
	err := l.s.fetchReplay(ctx, l.ep.Replay, 0, l.ep.Pod, l.ep.Model, &l.rb, func(r *events.Batch) { l.applyReplayed(ctx, r) })
	if err != nil {
		l.s.logLimited("replay:"+l.ep.Replay, "zmqsub: catch-up replay failed", "pod", l.ep.Pod, "endpoint", l.ep.Replay, "err", err)
	}
}
