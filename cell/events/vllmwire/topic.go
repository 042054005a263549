package vllmwire

import (
	"encoding/binary"
	"fmt"
)

// topicPrefix starts every topic this package accepts.
const topicPrefix = "kv@"

// ReplayEndSeq is the sequence number (all bits set, -1 as int64) that ends a
// replay stream; its payload is empty.
const ReplayEndSeq = ^uint64(0)

// Topic returns the ZMQ topic kv@<pod>@<model> a publisher for pod and model
// sends on.
func Topic(pod, model string) string {
	return topicPrefix + pod + "@" + model
}

// ParseTopic splits a topic of the form kv@<pod>@<model>. The pod is the text
// between the first and the second '@' and must not be empty; it may contain
// ':' (host:port addresses) but not '@'. The model is everything after the
// second '@' and may contain '/' and further '@'; it may be empty (model
// unknown). Any other topic, including kv@<pod> without a second '@', is an
// error wrapping ErrBadTopic.
func ParseTopic(topic string) (pod, model string, err error) {
	p, m, ok := splitTopic(topic)
	if !ok {
		return "", "", fmt.Errorf("%w: %q: want kv@<pod>@<model>", ErrBadTopic, topic)
	}
	return p, m, nil
}

// splitTopic is ParseTopic for strings and byte slices alike, so the message
// decoder can parse a topic frame without converting it to a string.
func splitTopic[T string | []byte](t T) (pod, model T, ok bool) {
	if len(t) < len(topicPrefix) || string(t[:len(topicPrefix)]) != topicPrefix {
		return pod, model, false
	}
	rest := t[len(topicPrefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '@' {
			if i == 0 {
				return pod, model, false
			}
			return rest[:i], rest[i+1:], true
		}
	}
	return pod, model, false
}

// EncodeSeq returns the 8-byte big-endian sequence frame for seq.
func EncodeSeq(seq uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq)
}

// ParseSeq decodes an 8-byte big-endian sequence frame, as found in live
// messages and in replay frames. Any other length is an error wrapping
// ErrBadSeq.
func ParseSeq(frame []byte) (uint64, error) {
	if len(frame) != 8 {
		return 0, fmt.Errorf("%w: %d bytes, want 8", ErrBadSeq, len(frame))
	}
	return binary.BigEndian.Uint64(frame), nil
}
