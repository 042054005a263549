package events

import (
	"errors"
	"fmt"
)

// Sentinel errors ApplyBatch wraps to say why it dropped a batch.
var (
	// ErrDuplicate means the batch's sequence number was not above the last
	// applied one: a replay or a duplicate delivery, dropped idempotently.
	ErrDuplicate = errors.New("events: duplicate batch")
	// ErrGap means batches are missing before this one; see GapError.
	ErrGap = errors.New("events: sequence gap")
	// ErrUnknownModel means the batch's model is not in Config.Models.
	ErrUnknownModel = errors.New("events: unknown model")
	// ErrInvalid means the batch is malformed; nothing of it was applied.
	ErrInvalid = errors.New("events: invalid batch")
	// ErrNoSlot means the index had no free slot for a new holder.
	ErrNoSlot = errors.New("events: no free index slot")
	// ErrUnknownPod means the batch names a pod that is not configured
	// while Config.RefuseUnknownPods is set.
	ErrUnknownPod = errors.New("events: unknown pod")
)

// GapError reports that batches From..To (inclusive) of a holder are
// missing. The batch that revealed the gap was not applied: a replay from
// From delivers it again in order. Pending is true when the gap was already
// reported and a replay is presumably under way, so the transport need not
// ask again. It matches ErrGap under errors.Is.
type GapError struct {
	// Holder is the publisher whose batches are missing.
	Holder string
	// From and To are the first and last missing sequence numbers.
	From, To uint64
	// Pending says whether this gap had already been reported.
	Pending bool
}

// Error describes the gap.
func (e *GapError) Error() string {
	return fmt.Sprintf("events: sequence gap for %s: missing %d..%d (pending %t)", e.Holder, e.From, e.To, e.Pending)
}

// Is reports whether target is ErrGap.
func (e *GapError) Is(target error) bool { return target == ErrGap }

// DropReason is the fixed set of labels under which dropped batches and
// events are counted. The batch reasons come with an error from ApplyBatch;
// the event reasons skip one event of a batch that is otherwise applied.
type DropReason uint8

// The drop reasons.
const (
	// ReasonDuplicate: a batch at or below the last sequence number (batch).
	ReasonDuplicate DropReason = iota
	// ReasonGap: a batch after missing ones, left for the replay (batch).
	ReasonGap
	// ReasonUnknownModel: a batch of a model not in Config.Models (batch).
	ReasonUnknownModel
	// ReasonInvalid: a malformed batch (batch).
	ReasonInvalid
	// ReasonNoSlot: no free index slot for a new holder (batch).
	ReasonNoSlot
	// ReasonUnknownParent: a BlockStored whose parent the holder never
	// stored, or which it has since removed (event).
	ReasonUnknownParent
	// ReasonSlidingWindow: a BlockStored of a sliding-window group (event).
	ReasonSlidingWindow
	// ReasonExtraKeys: blocks of a BlockStored carry extra cache keys with
	// no request-side counterpart (multimodal identifiers, prompt-embedding
	// digests), or descend from such a block; those blocks are not indexed,
	// the ones before them are (event). LoRA adapters and cache salts map
	// onto cache identity and are indexed.
	ReasonExtraKeys
	// ReasonNoTokens: a BlockStored without token ids (a snapshot-style
	// publisher): the router cannot hash its blocks, so they are tracked
	// but not indexed (event).
	ReasonNoTokens
	// ReasonOtherGroup: an event of a KV cache group other than the one the
	// holder indexes (event).
	ReasonOtherGroup
	// ReasonHolderFull: a BlockStored past Config.MaxBlocksPerPod (event).
	ReasonHolderFull
	// ReasonUnknownPod: a batch of a pod that is not configured, with
	// Config.RefuseUnknownPods set (batch).
	ReasonUnknownPod

	numReasons
)

var reasonNames = [numReasons]string{
	ReasonDuplicate:     "duplicate",
	ReasonGap:           "gap",
	ReasonUnknownModel:  "unknown_model",
	ReasonInvalid:       "invalid",
	ReasonNoSlot:        "no_slot",
	ReasonUnknownParent: "unknown_parent",
	ReasonSlidingWindow: "sliding_window",
	ReasonExtraKeys:     "unmapped_extra_keys",
	ReasonNoTokens:      "no_token_ids",
	ReasonOtherGroup:    "other_group",
	ReasonHolderFull:    "holder_full",
	ReasonUnknownPod:    "unknown_pod",
}

// String returns the reason's metric label.
func (r DropReason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// DropReasons returns every reason, in label order, for exporters.
func DropReasons() []DropReason {
	out := make([]DropReason, numReasons)
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}

// ReasonOf returns the drop reason of an error ApplyBatch returned, and
// false for nil or for an error that is not a drop (a cancelled context).
func ReasonOf(err error) (DropReason, bool) {
	switch {
	case err == nil:
		return 0, false
	case errors.Is(err, ErrDuplicate):
		return ReasonDuplicate, true
	case errors.Is(err, ErrGap):
		return ReasonGap, true
	case errors.Is(err, ErrUnknownModel):
		return ReasonUnknownModel, true
	case errors.Is(err, ErrInvalid):
		return ReasonInvalid, true
	case errors.Is(err, ErrNoSlot):
		return ReasonNoSlot, true
	case errors.Is(err, ErrUnknownPod):
		return ReasonUnknownPod, true
	}
	return 0, false
}
