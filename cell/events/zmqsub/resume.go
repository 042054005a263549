package zmqsub

import (
	"context"

	"github.com/cellrouter/cellrouter/cell/events"
)

// Resumer is the optional capability of a Sink restored from a snapshot
// (*events.Applier): Resume reports, once per holder, the last sequence
// number the holder applied before the snapshot, so that the first
// catch-up replays from the number after it instead of from 0 (which the
// applier would take for an engine restart and so clear what the snapshot
// restored).
type Resumer interface {
	Resume(pod string, rank int) (last uint64, ok bool)
}

var _ Resumer = (*events.Applier)(nil)

// resumePoint asks the sink where a restored holder resumes.
func (s *Subscriber) resumePoint(pod string, rank int) (uint64, bool) {
	r, ok := s.sink.(Resumer)
	if !ok {
		return 0, false
	}
	return r.Resume(pod, rank)
}

// firstContact catches up b's holder at its first message on a connection
// (h is its state, not nil). A holder restored from a snapshot at last:
//
//   - b numbered above last: the engine went on while the cell was down;
//     replay from last+1, then apply b;
//   - b numbered from 1 to last: live numbers after the snapshot cannot be
//     that low, so the engine restarted; catch up from 0 as after a
//     restart (the holder is cleared and rebuilt from the replay);
//   - b numbered 0: the applier itself sees the restart.
//
// Any other holder is caught up from 0 when b is numbered above 0.
func (st *stream) firstContact(ctx context.Context, b *events.Batch, h *holderState) {
	last, ok := st.s.resumePoint(b.Pod, b.DPRank)
	if !ok && h.resumed {
		last, ok = h.resumedAt, true // resumed at connection, nothing replayed
	}
	h.resumed = false
	switch {
	case ok && b.Seq > last:
		if b.Seq > last+1 {
			st.resumeFrom(ctx, b, last+1)
		}
	case ok && b.Seq > 0:
		st.s.counters.Restarts.Add(1)
		st.catchUp(ctx, b, true)
	case !ok && b.Seq > 0:
		st.catchUp(ctx, b, false)
	}
}

// resumeFrom replays b's publisher from seq from, applying each batch.
func (st *stream) resumeFrom(ctx context.Context, b *events.Batch, from uint64) {
	ep := st.replayEndpoint(b)
	if ep == "" {
		return // apply reports the gap and gives it up
	}
	st.s.counters.Resumes.Add(1)
	err := st.fetch(ctx, ep, from, b, func(r *events.Batch) { st.applyReplayed(ctx, r) })
	if err != nil {
		st.s.logLimited("replay:"+ep, "zmqsub: resume replay failed", "pod", b.Pod, "endpoint", ep, "from", from, "err", err)
	}
}

// endpointStart returns the seq a connection's catch-up of the endpoint's
// pod starts from: after the snapshot's number for a restored holder
// (remembered in its state, for firstContact if the replay brings nothing),
// else 0.
func (st *stream) endpointStart() uint64 {
	rank := -1
	if st.ep.HasRank {
		rank = st.ep.Rank
	}
	last, ok := st.s.resumePoint(st.ep.Pod, rank)
	h := st.state(&events.Batch{Pod: st.ep.Pod, DPRank: rank})
	if !ok {
		if h != nil {
			h.resumed = false // a later connection: nothing to resume
		}
		return 0
	}
	if h != nil {
		h.resumed, h.resumedAt = true, last
	}
	st.s.counters.Resumes.Add(1)
	return last + 1
}
