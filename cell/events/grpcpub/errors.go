package grpcpub

import (
	"errors"
	"fmt"
)

// ErrInvalid is the sentinel every ValidationError matches under errors.Is.
var ErrInvalid = errors.New("grpcpub: invalid request")

// The reason labels of dropped requests, fit for metric labels. Validation
// failures use the first group; the Server adds the others.
const (
	ReasonEmptyPod           = "empty_pod"
	ReasonTooLong            = "too_long"
	ReasonBadDPRank          = "bad_dp_rank"
	ReasonBadTS              = "bad_ts"
	ReasonTooManyEvents      = "too_many_events"
	ReasonEmptyEvent         = "empty_event"
	ReasonNoBlocks           = "no_blocks"
	ReasonTooManyBlocks      = "too_many_blocks"
	ReasonTooManyTokens      = "too_many_tokens"
	ReasonBadBlockSize       = "bad_block_size"
	ReasonTokenCountMismatch = "token_count_mismatch"
	ReasonTooManyExtraKeys   = "too_many_extra_keys"
	ReasonExtraKeysCount     = "extra_keys_count_mismatch"
	ReasonBadGroupIdx        = "bad_group_idx"
	ReasonBadSlidingWindow   = "bad_sliding_window"

	// ReasonDuplicate labels an event_id that was already processed.
	ReasonDuplicate = "duplicate"
	// ReasonGap labels an event_id beyond the next expected one.
	ReasonGap = "gap"
	// ReasonTooManyPublishers labels a request from a new publisher when the
	// server already tracks Config.MaxPublishers.
	ReasonTooManyPublishers = "too_many_publishers"
	// ReasonSink labels a batch the sink refused with an error that has no
	// Reason method of its own.
	ReasonSink = "sink"
	// ReasonForbiddenPod labels a request for a pod its caller may not
	// publish for (Config.Authorize); its stream ends with
	// PermissionDenied.
	ReasonForbiddenPod = "forbidden_pod"
	// ReasonUnknownPod labels a request for a pod the sink does not accept
	// (Config.Admits).
	ReasonUnknownPod = "unknown_pod"
)

// ValidationError says which rule a PublishRequest broke. It matches
// ErrInvalid under errors.Is.
type ValidationError struct {
	// Field is the path of the offending field, for example
	// "events[2].block_stored.token_ids".
	Field string
	// Detail says what was wrong with it, in words.
	Detail string

	reason string
}

// Error describes the broken rule.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("grpcpub: invalid request: %s: %s", e.Field, e.Detail)
}

// Reason returns the error's metric label (one of the Reason... constants).
func (e *ValidationError) Reason() string { return e.reason }

// Is reports whether target is ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// invalid builds a ValidationError.
func invalid(reason, field, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Detail: fmt.Sprintf(format, args...), reason: reason}
}

// reasoner is implemented by errors that carry a metric label.
type reasoner interface{ Reason() string }

// ReasonOf returns the metric label of err: its Reason() when err (or an
// error it wraps) has one, ReasonSink otherwise, and "" for nil.
func ReasonOf(err error) string {
	if err == nil {
		return ""
	}
	var r reasoner
	if errors.As(err, &r) {
		if s := r.Reason(); s != "" {
			return s
		}
	}
	return ReasonSink
}
