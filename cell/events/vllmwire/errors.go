package vllmwire

import "errors"

// The sentinel errors of the package. Every error a decoder returns wraps
// exactly one of them (with context naming the frame, event and field), so
// callers can test with errors.Is and label metrics with Reason.
var (
	// ErrFrameCount means a ZMQ message did not have three frames.
	ErrFrameCount = errors.New("vllmwire: wrong frame count")
	// ErrBadSeq means a sequence frame was not 8 bytes.
	ErrBadSeq = errors.New("vllmwire: bad sequence frame")
	// ErrBadTopic means a topic was not of the form kv@<pod>@<model>.
	ErrBadTopic = errors.New("vllmwire: bad topic")
	// ErrMsgpack means the payload is not well-formed msgpack, is
	// truncated, has trailing bytes, or has a value of the wrong msgpack
	// type where the EventBatch schema wants another.
	ErrMsgpack = errors.New("vllmwire: malformed msgpack")
	// ErrUnknownTag means an event's tag (array form) or "type" (map form)
	// names no event this package knows.
	ErrUnknownTag = errors.New("vllmwire: unknown event tag")
	// ErrBadEvent means the msgpack was well-formed but an event or the
	// batch breaks the schema's rules: a missing required field, a block
	// size of zero, a token count that is not blocks times block size, a
	// token id beyond uint32, a hash of fewer than 8 bytes, a negative rank.
	ErrBadEvent = errors.New("vllmwire: bad event")
	// ErrTooLarge means an array, string or nesting depth exceeded Limits.
	ErrTooLarge = errors.New("vllmwire: too large")
)

// reasons maps each sentinel to its metric label, in the order Reason tests them.
var reasons = [...]struct {
	err   error
	label string
}{
	{ErrFrameCount, "frame_count"},
	{ErrBadSeq, "bad_seq"},
	{ErrBadTopic, "topic"},
	{ErrTooLarge, "too_large"},
	{ErrUnknownTag, "unknown_tag"},
	{ErrBadEvent, "bad_event"},
	{ErrMsgpack, "msgpack"},
}

// Reason returns a short, fixed label for err fit for a metric label:
// "frame_count", "bad_seq", "topic", "msgpack", "unknown_tag", "bad_event"
// or "too_large". It returns "" for nil and "other" for an error that wraps
// none of the package's sentinels.
func Reason(err error) string {
	if err == nil {
		return ""
	}
	for _, r := range reasons {
		if errors.Is(err, r.err) {
			return r.label
		}
	}
	return "other"
}
