package vllmwire

import (
	"encoding/binary"
	"fmt"
)

// DefaultTopicPrefix starts the topics of the convention this project
// publishes with and documents, kv@<pod>@<model>. vLLM's own default topic
// is the empty string; see SplitTopic for what else is accepted.
const DefaultTopicPrefix = "kv@"

// ReplayEndSeq is the sequence number (all bits set, -1 as int64) that ends a
// replay stream; its payload is empty.
const ReplayEndSeq = ^uint64(0)

// Topic returns the ZMQ topic kv@<pod>@<model> a publisher for pod and model
// sends on.
func Topic(pod, model string) string {
	return DefaultTopicPrefix + pod + "@" + model
}

// ParseTopic splits a topic of the form kv@<pod>[@<model>] (SplitTopic with
// DefaultTopicPrefix). Any other topic is an error wrapping ErrBadTopic.
func ParseTopic(topic string) (pod, model string, err error) {
	p, m, ok := SplitTopic(topic, DefaultTopicPrefix)
	if !ok {
		return "", "", fmt.Errorf("%w: %q: want %s<pod>[@<model>]", ErrBadTopic, topic, DefaultTopicPrefix)
	}
	return p, m, nil
}

// SplitTopic reads a publisher's identity from a topic of the form
// <prefix><pod>[@<model>]: the topic must start with prefix (which may be
// empty); the pod is the text after it up to the next '@' and must not be
// empty; it may contain ':' (host:port addresses) but not '@'. The model is
// everything after that '@' and may contain '/' and further '@'; it is empty
// when there is no '@' (model unknown). ok is false when the topic names no
// pod. It works on strings and byte slices alike, so a receiver can read a
// topic frame without converting it.
func SplitTopic[T string | []byte](topic T, prefix string) (pod, model T, ok bool) {
	if len(topic) < len(prefix) || string(topic[:len(prefix)]) != prefix {
		return pod, model, false
	}
	rest := topic[len(prefix):]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '@' {
			if i == 0 {
				return pod, model, false
			}
			return rest[:i], rest[i+1:], true
		}
	}
	if len(rest) == 0 {
		return pod, model, false
	}
	return rest, rest[len(rest):], true
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
