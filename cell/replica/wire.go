package replica

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/gossip"
)

// The kinds of peer message (gossip.PeerMessage.Kind) this package sends;
// package gossip names every kind, and owns the drain message global
// replicas exchange too.
const (
	// KindLoad carries a batch of load changes.
	KindLoad = gossip.PeerKindLoad
	// KindDrain carries one gossip.Drain.
	KindDrain = gossip.PeerKindDrain
)

// wireVersion is the first byte of every body.
const wireVersion = 1

// Limits on decoded fields.
const (
	// MaxName bounds a pod id, template or cell id.
	MaxName = 256
	// MaxBlocks bounds a change's block counts.
	MaxBlocks = 1 << 31
	// MaxChanges bounds the changes of one body.
	MaxChanges = 4096
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("replica: malformed message")

// EncodeChanges packs the changes cs of the sender's run into bodies of at
// most max bytes each (a change that alone exceeds max gets a body of its
// own).
func EncodeChanges(run uint64, cs []load.Change, max int) [][]byte {
	var out [][]byte
	head := binary.AppendUvarint([]byte{wireVersion}, run)
	cur := append([]byte(nil), head...)
	var rec []byte
	for _, c := range cs {
		rec = appendChange(rec[:0], c)
		if len(cur)+len(rec) > max && len(cur) > len(head) {
			out = append(out, cur)
			cur = append([]byte(nil), head...)
		}
		cur = append(cur, rec...)
	}
	if len(cur) > len(head) {
		out = append(out, cur)
	}
	return out
}

func appendChange(b []byte, c load.Change) []byte {
	b = append(b, byte(c.Op))
	b = binary.AppendUvarint(b, c.ID)
	b = appendStr(b, c.Pod)
	if sized(c.Op) {
		b = binary.AppendUvarint(b, uint64(c.Blocks))
		b = binary.AppendUvarint(b, uint64(c.PrefillBlocks))
		b = appendStr(b, c.Template)
	}
	if c.Op == load.OpLive {
		var done byte
		if c.PrefillDone {
			done = 1
		}
		b = append(b, done)
	}
	return b
}

// sized reports whether a change of op carries the ticket's sizes and
// template (a start, or a resync's live state).
func sized(op load.Op) bool { return op == load.OpStart || op == load.OpLive }

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader reads the wire primitives; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (r *reader) u8(what string) byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.fail("%s: truncated", what)
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

func (r *reader) uv(what string, max uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("%s: bad varint", what)
		return 0
	}
	r.b = r.b[n:]
	if v > max {
		r.fail("%s: %d is above %d", what, v, max)
		return 0
	}
	return v
}

func (r *reader) str(what string) string {
	n := int(r.uv(what+" length", MaxName))
	if r.err != nil {
		return ""
	}
	if len(r.b) < n {
		r.fail("%s: length %d exceeds the %d bytes left", what, n, len(r.b))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func newReader(b []byte, what string) *reader {
	r := &reader{b: b}
	if v := r.u8(what + " version"); r.err == nil && v != wireVersion {
		r.fail("%s: unknown version %d", what, v)
	}
	return r
}

// DecodeChanges parses a body made by EncodeChanges: the sender's run and
// the changes.
func DecodeChanges(b []byte) (uint64, []load.Change, error) {
	r := newReader(b, "load")
	run := r.uv("run", 1<<63)
	var cs []load.Change
	for r.err == nil && len(r.b) > 0 {
		if len(cs) == MaxChanges {
			r.fail("load: more than %d changes", MaxChanges)
			break
		}
		c := load.Change{Op: load.Op(r.u8("op"))}
		if r.err == nil && (c.Op < load.OpStart || c.Op > load.OpLive) {
			r.fail("load: unknown op %d", c.Op)
		}
		c.ID = r.uv("id", 1<<63)
		c.Pod = r.str("pod")
		if sized(c.Op) {
			c.Blocks = int(r.uv("blocks", MaxBlocks))
			c.PrefillBlocks = int(r.uv("prefill blocks", MaxBlocks))
			c.Template = r.str("template")
			if r.err == nil && c.PrefillBlocks > c.Blocks {
				r.fail("load: %d prefill blocks of %d", c.PrefillBlocks, c.Blocks)
			}
		}
		if c.Op == load.OpLive {
			switch f := r.u8("prefill done"); {
			case r.err != nil:
			case f > 1:
				r.fail("load: prefill done flag %d", f)
			default:
				c.PrefillDone = f == 1
			}
		}
		cs = append(cs, c)
	}
	if r.err != nil {
		return 0, nil, r.err
	}
	if len(cs) == 0 {
		return 0, nil, fmt.Errorf("%w: load: no changes", ErrMalformed)
	}
	return run, cs, nil
}
