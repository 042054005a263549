package vllmwire

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/events"
)

// DecodeMessage decodes one live ZMQ message of three frames [topic, seq,
// payload] into b: Pod and Model from a topic of the form kv@<pod>[@<model>]
// (see ParseTopic), and the rest as DecodeFrames does. Receivers that know
// the publisher otherwise, or accept other topics, use DecodeFrames and
// SplitTopic.
//
// b is reused: its Events and their slices keep their capacity from call to
// call, and Pod and Model are only reallocated when they change, so decoding
// a steady stream allocates little. On error b must be discarded (its Events
// are emptied); nothing is half-applied as long as the caller applies b only
// after a nil error. DecodeMessage never panics and is safe for concurrent use
// with distinct batches.
func DecodeMessage(frames [][]byte, b *events.Batch, lim Limits) error {
	if len(frames) != 3 {
		b.Events = b.Events[:0]
		return FrameCountError(len(frames))
	}
	pod, model, ok := SplitTopic(frames[0], DefaultTopicPrefix)
	if !ok {
		b.Events = b.Events[:0]
		return TopicError(frames[0])
	}
	if err := DecodeFrames(frames, b, lim); err != nil {
		return err
	}
	SetString(&b.Pod, pod)
	SetString(&b.Model, model)
	return nil
}

// DecodeFrames decodes the seq and payload frames of one live message
// [topic, seq, payload] into b's Seq, TS, DPRank and Events, leaving Pod and
// Model to the caller (the topic is not read). Reuse of b, errors and safety
// are as for DecodeMessage.
func DecodeFrames(frames [][]byte, b *events.Batch, lim Limits) error {
	if len(frames) != 3 {
		b.Events = b.Events[:0]
		return FrameCountError(len(frames))
	}
	seq, err := ParseSeq(frames[1])
	if err != nil {
		b.Events = b.Events[:0]
		return err
	}
	if err := DecodePayload(frames[2], b, lim); err != nil {
		return err
	}
	b.Seq = seq
	return nil
}

// FrameCountError is the error for a live message of n frames (not 3).
func FrameCountError(n int) error {
	return fmt.Errorf("%w: %d frames, want 3 [topic, seq, payload]", ErrFrameCount, n)
}

// TopicError is the error for a topic that names no publisher, showing at
// most its first 64 bytes.
func TopicError(topic []byte) error {
	return fmt.Errorf("%w: %q names no pod", ErrBadTopic, ShownTopic(topic))
}

// ShownTopic returns at most the first 64 bytes of topic, for logs.
func ShownTopic(topic []byte) []byte {
	if len(topic) > 64 {
		return topic[:64]
	}
	return topic
}

// SetString sets *dst to the string of b unless it already is that string,
// so that a steady stream of one publisher's messages allocates nothing.
func SetString(dst *string, b []byte) {
	if string(b) != *dst {
		*dst = string(b)
	}
}

// DecodeReplay decodes one frame pair [seq, payload] of a replay stream into
// b's Seq, TS, DPRank and Events, leaving Pod and Model (which the caller
// knows from the stream it asked) alone. done is true, with no events, for
// the end marker: seq ReplayEndSeq with an empty payload. Reuse of b, errors
// and safety are as for DecodeMessage.
func DecodeReplay(frames [][]byte, b *events.Batch, lim Limits) (done bool, err error) {
	if len(frames) != 2 {
		b.Events = b.Events[:0]
		return false, fmt.Errorf("%w: %d replay frames, want 2 [seq, payload]", ErrFrameCount, len(frames))
	}
	seq, err := ParseSeq(frames[0])
	if err != nil {
		b.Events = b.Events[:0]
		return false, err
	}
	if seq == ReplayEndSeq {
		b.Events = b.Events[:0]
		if len(frames[1]) != 0 {
			return false, fmt.Errorf("%w: replay end marker with a %d-byte payload", ErrMsgpack, len(frames[1]))
		}
		return true, nil
	}
	if err := DecodePayload(frames[1], b, lim); err != nil {
		return false, err
	}
	b.Seq = seq
	return false, nil
}

// DecodePayload decodes one msgpack EventBatch (the third frame of a live
// message, the second of a replay frame) into b's TS, DPRank and Events. It
// leaves Pod, Model and Seq alone: the caller knows them from the topic or the
// replay stream. Reuse of b, errors and safety are as for DecodeMessage.
func DecodePayload(payload []byte, b *events.Batch, lim Limits) error {
	r := getReader(payload, lim.withDefaults())
	err := r.batch(b)
	if err == nil && r.br.Len() != 0 {
		err = fmt.Errorf("%w: %d trailing bytes after the batch", ErrMsgpack, r.br.Len())
	}
	putReader(r)
	if err != nil {
		b.Events = b.Events[:0]
	}
	return err
}

// batch decodes an EventBatch in array form [ts, events, dp_rank?, ...] or
// map form {"ts":..., "events":[...], "data_parallel_rank":...}. Elements
// after the third and unknown map keys are skipped, for engines newer than
// this package.
func (r *reader) batch(b *events.Batch) error {
	b.TS, b.DPRank = 0, -1
	c, err := r.peek("batch")
	if err != nil {
		return err
	}
	switch {
	case isArray(c):
		n, err := r.arrayLen("batch", 1<<20)
		if err != nil {
			return err
		}
		if n < 2 {
			return fmt.Errorf("%w: batch array of %d elements, want [ts, events, dp_rank?]", ErrMsgpack, n)
		}
		if b.TS, err = r.floatVal("batch ts"); err != nil {
			return err
		}
		if err := r.events(b); err != nil {
			return err
		}
		if n >= 3 {
			if err := r.rank(b); err != nil {
				return err
			}
		}
		for k := 3; k < n; k++ {
			if err := r.skip("batch element"); err != nil {
				return err
			}
		}
		return nil
	case isMap(c):
		n, err := r.mapLen("batch", 1<<20)
		if err != nil {
			return err
		}
		sawEvents := false
		for k := 0; k < n; k++ {
			key, _, err := r.bytesVal("batch key")
			if err != nil {
				return err
			}
			switch string(key) {
			case "ts":
				b.TS, err = r.floatVal("batch ts")
			case "events":
				err = r.events(b)
				sawEvents = true
			case "data_parallel_rank", "attn_dp_rank": // vLLM, SGLang
				err = r.rank(b)
			default:
				err = r.skip("batch field")
			}
			if err != nil {
				return err
			}
		}
		if !sawEvents {
			return fmt.Errorf("%w: batch map without \"events\"", ErrBadEvent)
		}
		return nil
	}
	return fmt.Errorf("%w: batch: want array or map, got code %#x", ErrMsgpack, c)
}

// rank decodes data_parallel_rank: nil is -1, a negative rank is an error.
func (r *reader) rank(b *events.Batch) error {
	v, ok, err := r.intVal("data_parallel_rank")
	switch {
	case err != nil:
		return err
	case !ok:
		b.DPRank = -1
	case v < 0 || v > 1<<30:
		return fmt.Errorf("%w: data_parallel_rank %d out of range", ErrBadEvent, v)
	default:
		b.DPRank = int(v)
	}
	return nil
}

// events decodes the events array into b.Events, reusing the Events (and
// their slices) already there.
func (r *reader) events(b *events.Batch) error {
	n, err := r.arrayLen("events", r.lim.MaxEvents)
	if err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("%w: events is nil", ErrMsgpack)
	}
	if cap(b.Events) < n {
		grown := make([]events.Event, n)
		copy(grown, b.Events[:cap(b.Events)])
		b.Events = grown
	}
	b.Events = b.Events[:n]
	for k := range b.Events {
		if err := r.event(&b.Events[k]); err != nil {
			return fmt.Errorf("%w (event %d)", err, k)
		}
	}
	return nil
}
