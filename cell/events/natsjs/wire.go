package natsjs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// The header names of the wire format (see the package doc). nats.Header
// lookups are case-sensitive; these are also their canonical MIME forms, so
// publishers that canonicalise header names produce them too.
const (
	// HeaderPod names the publishing pod. Required.
	HeaderPod = "Kv-Pod"
	// HeaderModel names the served model. Optional; absent or empty means
	// unknown (the applier's default model).
	HeaderModel = "Kv-Model"
	// HeaderSeq is the publisher's sequence number in decimal. Required.
	HeaderSeq = "Kv-Seq"
	// HeaderDPRank is the data-parallel rank in decimal. Optional.
	HeaderDPRank = "Kv-Dp-Rank"
)

// DefaultSubjectPrefix is the subject prefix events are published under:
// subjects are <prefix>.<pod token>.
const DefaultSubjectPrefix = "kv.events"

// Header limits: a value beyond them is a bad header.
const (
	// MaxPodLen is the longest Kv-Pod value accepted, in bytes.
	MaxPodLen = 256
	// MaxModelLen is the longest Kv-Model value accepted, in bytes.
	MaxModelLen = 1024
	// MaxDPRank is the highest Kv-Dp-Rank accepted.
	MaxDPRank = 1<<16 - 1
)

// ErrHeader is wrapped by every error ParseHeaders returns.
var ErrHeader = errors.New("natsjs: bad header")

// Meta is what the headers of one message say about its batch.
type Meta struct {
	// Pod is the Kv-Pod value.
	Pod string
	// Model is the Kv-Model value ("" when absent).
	Model string
	// Seq is the Kv-Seq value.
	Seq uint64
	// DPRank is the Kv-Dp-Rank value, or -1 when absent.
	DPRank int
}

// ParseHeaders reads the batch identity from a message's headers. Kv-Pod and
// Kv-Seq are required; Kv-Model and Kv-Dp-Rank are optional. A header given
// more than once, an empty or oversized pod, a value with control characters,
// a Kv-Seq that is not a decimal uint64 or a Kv-Dp-Rank outside [0,
// MaxDPRank] is an error wrapping ErrHeader. It never panics.
func ParseHeaders(h nats.Header) (Meta, error) {
	m := Meta{DPRank: -1}
	pod, ok, err := single(h, HeaderPod, MaxPodLen)
	if err != nil {
		return m, err
	}
	if !ok || pod == "" {
		return m, fmt.Errorf("%w: %s missing or empty", ErrHeader, HeaderPod)
	}
	m.Pod = pod
	if m.Model, _, err = single(h, HeaderModel, MaxModelLen); err != nil {
		return m, err
	}
	seq, ok, err := single(h, HeaderSeq, 20)
	if err != nil {
		return m, err
	}
	if !ok {
		return m, fmt.Errorf("%w: %s missing", ErrHeader, HeaderSeq)
	}
	if m.Seq, err = parseDecimal(seq); err != nil {
		return m, fmt.Errorf("%w: %s %q: %v", ErrHeader, HeaderSeq, seq, err)
	}
	rank, ok, err := single(h, HeaderDPRank, 5)
	if err != nil {
		return m, err
	}
	if ok {
		r, err := parseDecimal(rank)
		if err != nil || r > MaxDPRank {
			return m, fmt.Errorf("%w: %s %q: want a decimal in [0, %d]", ErrHeader, HeaderDPRank, rank, MaxDPRank)
		}
		m.DPRank = int(r)
	}
	return m, nil
}

// single returns the one value of header key, whether it is present, and an
// error if it is repeated, longer than max bytes or has control characters.
func single(h nats.Header, key string, max int) (string, bool, error) {
	vs := h[key]
	switch {
	case len(vs) == 0:
		return "", false, nil
	case len(vs) > 1:
		return "", true, fmt.Errorf("%w: %s given %d times", ErrHeader, key, len(vs))
	}
	v := vs[0]
	if len(v) > max {
		return "", true, fmt.Errorf("%w: %s is %d bytes, at most %d", ErrHeader, key, len(v), max)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == 0x7f {
			return "", true, fmt.Errorf("%w: %s has control byte 0x%02x", ErrHeader, key, c)
		}
	}
	return v, true, nil
}

// parseDecimal parses a non-empty string of ASCII digits as a uint64, with
// no sign, no underscores and no base prefix.
func parseDecimal(s string) (uint64, error) {
	if s == "" {
		return 0, errors.New("empty")
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("non-digit %q", s[i])
		}
	}
	return strconv.ParseUint(s, 10, 64)
}

// SetHeaders sets the wire headers of a batch of pod, model, seq and rank
// (rank < 0: no Kv-Dp-Rank) on h.
func SetHeaders(h nats.Header, pod, model string, seq uint64, rank int) {
	h.Set(HeaderPod, pod)
	if model != "" {
		h.Set(HeaderModel, model)
	}
	h.Set(HeaderSeq, strconv.FormatUint(seq, 10))
	if rank >= 0 {
		h.Set(HeaderDPRank, strconv.Itoa(rank))
	}
}

// PodToken returns the subject token for pod: bytes in [A-Za-z0-9_-] are kept
// and every other byte (the '.', '*', '>' and whitespace NATS reserves, but
// also ':', '/', '%', non-ASCII) becomes %XX, uppercase hex. The mapping is
// injective, so two pods never share a subject, and the token is a valid
// NATS subject token. The empty pod maps to "%" (no pod id is empty; the
// consumer rejects such messages by their header anyway).
func PodToken(pod string) string {
	if pod == "" {
		return "%"
	}
	clean := true
	for i := 0; i < len(pod); i++ {
		if !tokenSafe(pod[i]) {
			clean = false
			break
		}
	}
	if clean {
		return pod
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(pod) + 8)
	for i := 0; i < len(pod); i++ {
		c := pod[i]
		if tokenSafe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// tokenSafe reports whether c is kept as is in a subject token.
func tokenSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

// Subject returns the subject a publisher for pod sends on: <prefix>.<PodToken(pod)>.
func Subject(prefix, pod string) string {
	return prefix + "." + PodToken(pod)
}
