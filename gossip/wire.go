package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// WireVersion is the first byte of every message this package encodes. It
// also pins the Bloom position scheme (a 512-bit block chosen from the
// chained hash, nine-bit positions in it from its splitmix64 finaliser; see
// Summary.MayContain): a change to either bumps it. Version 2 introduced the
// blocked layout; version 3 the publishing replica's node name in headers,
// snapshots and deltas, peer messages between replicas, and
// Load.LeastPodBlocks in the load; version 4 the loads of the cell's
// lightest pods (Load.Lightest), after LeastPodBlocks: a count, then each
// as its rise over the one before (the first over LeastPodBlocks, so 0).
const WireVersion = 4

// Message types, the second byte of every message.
const (
	typeMeta     = 1
	typeHeader   = 2
	typeSnapshot = 3
	typeDelta    = 4
	typeFetch    = 5
	typeState    = 6
	typePeer     = 7
	// typeBands (BandLoad) came without a version bump: a node of an
	// earlier version drops a message of a type it does not know and
	// carries on, so pools of mixed versions keep working.
	typeBands = 8
)

// Limits on strings inside messages.
const (
	// MaxCellIDLen is the longest cell id accepted.
	MaxCellIDLen = 64
	// MaxNodeNameLen is the longest memberlist node name accepted.
	MaxNodeNameLen = 128
	// MaxAddrLen is the longest API address accepted in node metadata.
	MaxAddrLen = 128
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("gossip: malformed message")

// encoder appends the wire primitives to a byte slice.
type encoder struct{ b []byte }

func newEncoder(typ byte, sizeHint int) *encoder {
	e := &encoder{b: make([]byte, 0, sizeHint+2)}
	e.b = append(e.b, WireVersion, typ)
	return e
}

func (e *encoder) u8(v byte)      { e.b = append(e.b, v) }
func (e *encoder) uv(v uint64)    { e.b = binary.AppendUvarint(e.b, v) }
func (e *encoder) str(s string)   { e.uv(uint64(len(s))); e.b = append(e.b, s...) }
func (e *encoder) blob(p []byte)  { e.uv(uint64(len(p))); e.b = append(e.b, p...) }
func (e *encoder) u64le(v uint64) { e.b = binary.LittleEndian.AppendUint64(e.b, v) }

func (e *encoder) params(p Params) {
	e.uv(p.M)
	e.uv(uint64(p.K))
	e.uv(uint64(p.Stride))
	e.uv(uint64(p.Head))
}

func (e *encoder) load(l Load) {
	e.uv(uint64(l.ActiveRequests))
	e.uv(uint64(l.ActiveBlocks))
	e.uv(uint64(l.FreeBlocks))
	e.uv(uint64(l.Pods))
	e.uv(uint64(l.LeastPodBlocks))
	n := min(max(l.NLightest, 0), LightestPods)
	e.uv(uint64(n))
	prev := l.LeastPodBlocks
	for _, b := range l.Lightest[:n] {
		e.uv(uint64(max(0, b-prev)))
		prev = max(prev, b)
	}
}

// decoder reads the wire primitives; the first error sticks and every later
// read returns a zero value, so callers check err once at the end.
type decoder struct {
	b   []byte
	off int
	err error
}

// newDecoder checks the version and type bytes.
func newDecoder(b []byte, typ byte, what string) *decoder {
	d := &decoder{b: b}
	switch {
	case len(b) < 2:
		d.fail("%s: %d bytes is too short", what, len(b))
	case b[0] != WireVersion:
		d.fail("%s: unknown version %d", what, b[0])
	case b[1] != typ:
		d.fail("%s: message type %d, want %d", what, b[1], typ)
	}
	d.off = 2
	return d
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

func (d *decoder) remaining() int {
	if d.err != nil {
		return 0
	}
	return len(d.b) - d.off
}

func (d *decoder) u8(what string) byte {
	if d.remaining() < 1 {
		d.fail("%s: truncated", what)
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

// uv reads a uvarint no larger than max.
func (d *decoder) uv(what string, max uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("%s: bad varint", what)
		return 0
	}
	d.off += n
	if v > max {
		d.fail("%s: %d is above %d", what, v, max)
		return 0
	}
	return v
}

// bytes reads a length-prefixed byte string of at most max bytes; the result
// aliases the input.
func (d *decoder) bytes(what string, max int) []byte {
	n := int(d.uv(what+" length", uint64(max)))
	if d.err != nil {
		return nil
	}
	if d.remaining() < n {
		d.fail("%s: length %d exceeds the %d bytes left", what, n, d.remaining())
		return nil
	}
	p := d.b[d.off : d.off+n : d.off+n]
	d.off += n
	return p
}

func (d *decoder) str(what string, max int) string { return string(d.bytes(what, max)) }

func (d *decoder) params() Params {
	return Params{
		M:      d.uv("params M", MaxFilterBits),
		K:      uint32(d.uv("params K", MaxHashFuncs)),
		Stride: uint32(d.uv("params Stride", MaxStride)),
		Head:   uint32(d.uv("params Head", MaxHead)),
	}
}

func (d *decoder) validParams() Params {
	p := d.params()
	if d.err == nil {
		if err := p.Validate(); err != nil {
			d.fail("%v", err)
		}
	}
	return p
}

func (d *decoder) load() Load {
	l := Load{
		ActiveRequests: int(d.uv("load ActiveRequests", MaxLoadValue)),
		ActiveBlocks:   int(d.uv("load ActiveBlocks", MaxLoadValue)),
		FreeBlocks:     int(d.uv("load FreeBlocks", MaxLoadValue)),
		Pods:           int(d.uv("load Pods", MaxLoadValue)),
		LeastPodBlocks: int(d.uv("load LeastPodBlocks", MaxLoadValue)),
	}
	l.NLightest = int(d.uv("load lightest pods", LightestPods))
	prev := uint64(l.LeastPodBlocks)
	for i := range l.NLightest {
		rise := d.uv("load lightest pod", MaxLoadValue)
		if i == 0 && rise != 0 {
			d.fail("load: lightest pod %d blocks above the least loaded pod", rise)
		}
		if prev += rise; prev > MaxLoadValue {
			d.fail("load: lightest pod above %d blocks", uint64(MaxLoadValue))
		}
		l.Lightest[i] = int(min(prev, MaxLoadValue))
	}
	return l
}

// cell reads a cell id, which must be non-empty.
func (d *decoder) cell() string {
	c := d.str("cell", MaxCellIDLen)
	if d.err == nil && c == "" {
		d.fail("cell: empty")
	}
	return c
}

// done fails unless every byte was consumed, and returns the sticky error.
func (d *decoder) done(what string) error {
	if d.err == nil && d.off != len(d.b) {
		d.fail("%s: %d trailing bytes", what, len(d.b)-d.off)
	}
	return d.err
}

// messageType returns the type byte of an encoded message.
func messageType(b []byte) (byte, error) {
	if len(b) < 2 || b[0] != WireVersion {
		return 0, fmt.Errorf("%w: no version %d prefix", ErrMalformed, WireVersion)
	}
	return b[1], nil
}
