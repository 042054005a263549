package events

// SeqAction is what a SeqTracker decides for a batch.
type SeqAction uint8

// The sequence decisions.
const (
	// SeqApply: the batch is the next in order (or the first seen): apply it.
	SeqApply SeqAction = iota + 1
	// SeqDuplicate: the batch is at or below the last applied one (a
	// replay overlap or a duplicate delivery): drop it.
	SeqDuplicate
	// SeqGap: batches are missing before this one: do not apply it, ask for
	// a replay of the missing range; the publisher is degraded until the
	// range is applied or the transport gives up.
	SeqGap
	// SeqRestart: the sequence went back to 0 after a higher number: the
	// engine restarted with an empty cache. Clear the holder, then apply.
	SeqRestart
)

// String names the action.
func (a SeqAction) String() string {
	switch a {
	case SeqApply:
		return "apply"
	case SeqDuplicate:
		return "duplicate"
	case SeqGap:
		return "gap"
	case SeqRestart:
		return "restart"
	}
	return "unknown"
}

// SeqDecision is a SeqTracker's verdict on one batch.
type SeqDecision struct {
	// Action says what to do with the batch.
	Action SeqAction
	// From and To are the missing range, inclusive (SeqGap only).
	From, To uint64
	// Pending is true for SeqGap when the tracker was already waiting for a
	// replay (the gap was reported before; To may have grown).
	Pending bool
	// Repaired is true when this batch filled the last missing number of a
	// gap: the publisher is in order again.
	Repaired bool
}

// SeqTracker follows one publisher's sequence numbers. It is a pure value
// (no clock, no goroutines, no locks): the owner serialises calls. The zero
// value is ready: it has seen nothing and accepts any first number.
//
// Engines number batches from 0 at process start (vLLM's ZMQ publisher).
// The tracker accepts the first number it sees as the baseline, so a
// subscriber that joins late does not ask for history. It cannot tell an
// engine restart whose first batch it missed from a replay overlap: only a
// sequence number of exactly 0 after a higher one counts as a restart, and a
// restart after an engine that only ever sent batch 0 looks like a duplicate.
type SeqTracker struct {
	last      uint64
	started   bool
	repairing bool
	gapFrom   uint64
	gapTo     uint64
}

// Next decides what to do with the batch numbered seq and advances the
// tracker as if the decision were carried out (for SeqApply and SeqRestart,
// seq becomes the last applied number; SeqGap and SeqDuplicate change
// nothing but the known extent of the gap).
func (t *SeqTracker) Next(seq uint64) SeqDecision {
	switch {
	case !t.started:
		t.started, t.last = true, seq
		return SeqDecision{Action: SeqApply}
	case seq == 0 && t.last > 0:
		t.last, t.repairing = 0, false
		return SeqDecision{Action: SeqRestart}
	case seq <= t.last:
		return SeqDecision{Action: SeqDuplicate}
	case seq == t.last+1:
		t.last = seq
		d := SeqDecision{Action: SeqApply}
		if t.repairing && t.last >= t.gapTo {
			t.repairing = false
			d.Repaired = true
		}
		return d
	}
	// seq > last+1: a gap.
	d := SeqDecision{Action: SeqGap, From: t.last + 1, To: seq - 1, Pending: t.repairing}
	if t.repairing {
		t.gapTo = max(t.gapTo, seq-1)
	} else {
		t.repairing, t.gapFrom, t.gapTo = true, t.last+1, seq-1
	}
	d.To = t.gapTo
	return d
}

// Reset forgets everything: the next number is accepted as a new baseline.
// The applier calls it when a gap is abandoned (after clearing the holder,
// whose view may have lost events) and when a holder is killed.
func (t *SeqTracker) Reset() { *t = SeqTracker{} }

// Last returns the last applied sequence number, and false if none was.
func (t *SeqTracker) Last() (uint64, bool) { return t.last, t.started }

// Degraded reports whether the tracker waits for a replay, and the missing
// range it waits for.
func (t *SeqTracker) Degraded() (from, to uint64, ok bool) {
	return t.gapFrom, t.gapTo, t.repairing
}
