package grpcpub

import "sync"

// SeqAction is what a Sequencer decides for one request.
type SeqAction uint8

// The sequencing decisions.
const (
	// SeqNext: the event_id is the next one (or the first seen from the
	// publisher): process the batch.
	SeqNext SeqAction = iota + 1
	// SeqDuplicate: the event_id was already processed: drop the batch.
	SeqDuplicate
	// SeqGap: event_ids are missing before this one: do not process it; the
	// publisher resends from ResendFrom.
	SeqGap
)

// SeqVerdict is a Sequencer's decision on one request.
type SeqVerdict struct {
	// Action says what to do.
	Action SeqAction
	// ClearFirst is set with SeqNext when the batch is the first of a new
	// run of the publisher (the engine restarted): everything the publisher
	// reported before must be cleared before the batch is applied.
	ClearFirst bool
	// ResendFrom is the first missing event_id (SeqGap only).
	ResendFrom uint64
	// Acked is the highest event_id of the publisher's current run already
	// processed; HasAcked is false when none is.
	Acked    uint64
	HasAcked bool
}

// Sequencer follows the event_ids of publishers. Check is a pure query;
// Commit records a processed event_id. The Server calls both for one
// publisher under one lock, so an implementation only needs to be safe for
// concurrent calls on different publishers.
type Sequencer interface {
	// Check decides what to do with event_id id of run epoch (0 when the
	// publisher does not say) of publisher pub. It changes nothing.
	Check(pub string, epoch, id uint64) SeqVerdict
	// Commit records that event_id id of run epoch of pub was processed
	// (applied, or dropped for a reason) after Check returned SeqNext.
	Commit(pub string, epoch, id uint64)
}

// MemSequencer is the in-memory Sequencer. A publisher's first event_id is
// taken as its baseline, so a cell that starts after its publishers does
// not ask for history it cannot use. A return to event_id 0 after a higher
// one is a restart unless both runs carry the same non-zero epoch; a change
// between two non-zero epochs is a restart whatever the event_id, and until
// the new run's event_id 0 is processed every request of it is a gap asking
// for a resend from 0. The zero value is not ready; use NewMemSequencer.
type MemSequencer struct {
	mu   sync.Mutex
	pubs map[string]seqState
}

// seqState is what MemSequencer keeps per publisher.
type seqState struct {
	epoch uint64
	last  uint64
}

// NewMemSequencer returns a MemSequencer that has seen no publisher.
func NewMemSequencer() *MemSequencer {
	return &MemSequencer{pubs: make(map[string]seqState)}
}

// Check implements Sequencer.
func (m *MemSequencer) Check(pub string, epoch, id uint64) SeqVerdict {
	m.mu.Lock()
	st, ok := m.pubs[pub]
	m.mu.Unlock()
	return decide(st, ok, epoch, id)
}

// decide is the sequencing rule: st is the publisher's state (seen false
// when it has none).
func decide(st seqState, seen bool, epoch, id uint64) SeqVerdict {
	if !seen {
		return SeqVerdict{Action: SeqNext}
	}
	newRun := epoch != 0 && st.epoch != 0 && epoch != st.epoch
	sameRun := epoch != 0 && epoch == st.epoch
	switch {
	case newRun && id == 0:
		return SeqVerdict{Action: SeqNext, ClearFirst: true}
	case newRun:
		return SeqVerdict{Action: SeqGap, ResendFrom: 0}
	case id == 0 && st.last > 0 && !sameRun:
		return SeqVerdict{Action: SeqNext, ClearFirst: true}
	case id == st.last+1:
		return SeqVerdict{Action: SeqNext, Acked: st.last, HasAcked: true}
	case id <= st.last:
		return SeqVerdict{Action: SeqDuplicate, Acked: st.last, HasAcked: true}
	default:
		return SeqVerdict{Action: SeqGap, ResendFrom: st.last + 1, Acked: st.last, HasAcked: true}
	}
}

// Commit implements Sequencer.
func (m *MemSequencer) Commit(pub string, epoch, id uint64) {
	m.mu.Lock()
	m.pubs[pub] = seqState{epoch: epoch, last: id}
	m.mu.Unlock()
}

// Last returns the last processed event_id of pub, and false when the
// sequencer has not seen pub.
func (m *MemSequencer) Last(pub string) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.pubs[pub]
	return st.last, ok
}
