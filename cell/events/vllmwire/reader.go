package vllmwire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// reader walks one payload. It pairs a msgpack.Decoder (for headers and
// scalars) with direct access to the payload bytes, which it uses for the two
// hot loops (hash and token arrays), for zero-copy strings and for skipping.
// Both views share one position: the Decoder reads from br, a bytes.Reader
// that implements io.ByteScanner, so the Decoder buffers nothing and seeking
// br moves the Decoder too.
type reader struct {
	buf []byte
	br  bytes.Reader
	dec *msgpack.Decoder
	lim Limits
	// render is scratch space for rendering extra keys.
	render []byte
}

// readerPool recycles readers so that a steady stream of decodes allocates
// nothing for decoder state.
var readerPool = sync.Pool{New: func() any {
	r := new(reader)
	r.dec = msgpack.NewDecoder(&r.br)
	return r
}}

// getReader returns a pooled reader positioned at the start of payload.
func getReader(payload []byte, lim Limits) *reader {
	r := readerPool.Get().(*reader)
	r.buf = payload
	r.br.Reset(payload)
	r.lim = lim
	return r
}

// putReader returns r to the pool, dropping its reference to the payload.
func putReader(r *reader) {
	r.buf = nil
	r.br.Reset(nil)
	if cap(r.render) > 1<<16 {
		r.render = nil
	}
	readerPool.Put(r)
}

// pos is the offset of the next unread byte.
func (r *reader) pos() int { return len(r.buf) - r.br.Len() }

// seek moves to offset i, which the caller has checked is within buf.
func (r *reader) seek(i int) { _, _ = r.br.Seek(int64(i), io.SeekStart) }

// mpErr wraps a failure of the msgpack layer while reading what.
func mpErr(what string, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("%w: %s: %w", ErrMsgpack, what, err)
}

// truncated is the error for a value that runs past the end of the payload.
func truncated(what string) error {
	return fmt.Errorf("%w: %s: %w", ErrMsgpack, what, io.ErrUnexpectedEOF)
}

// peek returns the next msgpack code without consuming it.
func (r *reader) peek(what string) (byte, error) {
	c, err := r.dec.PeekCode()
	if err != nil {
		return 0, mpErr(what, err)
	}
	return c, nil
}

// isArray says whether c starts an array.
func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

// isMap says whether c starts a map.
func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

// isInt says whether c starts a msgpack integer.
func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || (c >= msgpcode.Uint8 && c <= msgpcode.Int64)
}

// tryNil consumes a nil and reports whether there was one.
func (r *reader) tryNil(what string) (bool, error) {
	c, err := r.peek(what)
	if err != nil {
		return false, err
	}
	if c != msgpcode.Nil {
		return false, nil
	}
	_, _ = r.br.ReadByte()
	return true, nil
}

// arrayLen reads an array header: -1 for nil. It rejects more elements than
// bytes left with ErrMsgpack (truncated), then more than max elements with
// ErrTooLarge.
func (r *reader) arrayLen(what string, max int) (int, error) {
	n, err := r.dec.DecodeArrayLen()
	if err != nil {
		return 0, mpErr(what, err)
	}
	if n > r.br.Len() {
		return 0, truncated(what)
	}
	if n > max {
		return 0, fmt.Errorf("%w: %s: %d elements, limit %d", ErrTooLarge, what, n, max)
	}
	return n, nil
}

// mapLen reads a map header: -1 for nil. Its bounds are those of arrayLen,
// with two bytes at least per entry.
func (r *reader) mapLen(what string, max int) (int, error) {
	c, err := r.peek(what)
	if err != nil {
		return 0, err
	}
	if c != msgpcode.Nil && !isMap(c) {
		return 0, fmt.Errorf("%w: %s: want map, got code %#x", ErrMsgpack, what, c)
	}
	n, err := r.dec.DecodeMapLen()
	if err != nil {
		return 0, mpErr(what, err)
	}
	if 2*n > r.br.Len() {
		return 0, truncated(what)
	}
	if n > max {
		return 0, fmt.Errorf("%w: %s: %d entries, limit %d", ErrTooLarge, what, n, max)
	}
	return n, nil
}

// bytesVal reads a str or bin value and returns its bytes without copying:
// the slice aliases the payload and is valid until the reader is put back.
// isNil is true (and the slice nil) when the value is nil.
func (r *reader) bytesVal(what string) (b []byte, isNil bool, err error) {
	c, err := r.peek(what)
	if err != nil {
		return nil, false, err
	}
	if c == msgpcode.Nil {
		_, _ = r.br.ReadByte()
		return nil, true, nil
	}
	if !msgpcode.IsString(c) && !msgpcode.IsBin(c) {
		return nil, false, fmt.Errorf("%w: %s: want string, got code %#x", ErrMsgpack, what, c)
	}
	n, err := r.dec.DecodeBytesLen()
	if err != nil {
		return nil, false, mpErr(what, err)
	}
	if n > r.lim.MaxStringLen {
		return nil, false, fmt.Errorf("%w: %s: %d bytes, limit %d", ErrTooLarge, what, n, r.lim.MaxStringLen)
	}
	p := r.pos()
	if n > len(r.buf)-p {
		return nil, false, truncated(what)
	}
	r.seek(p + n)
	return r.buf[p : p+n : p+n], false, nil
}

// intVal reads an integer or nil; ok is false for nil.
func (r *reader) intVal(what string) (v int64, ok bool, err error) {
	if isNil, err := r.tryNil(what); err != nil || isNil {
		return 0, false, err
	}
	c, err := r.peek(what)
	if err != nil {
		return 0, false, err
	}
	if !isInt(c) {
		return 0, false, fmt.Errorf("%w: %s: want integer, got code %#x", ErrMsgpack, what, c)
	}
	v, err = r.dec.DecodeInt64()
	if err != nil {
		return 0, false, mpErr(what, err)
	}
	return v, true, nil
}

// floatVal reads a float or integer; nil reads as 0.
func (r *reader) floatVal(what string) (float64, error) {
	c, err := r.peek(what)
	if err != nil {
		return 0, err
	}
	switch {
	case c == msgpcode.Nil:
		_, _ = r.br.ReadByte()
		return 0, nil
	case c == msgpcode.Float || c == msgpcode.Double:
		v, err := r.dec.DecodeFloat64()
		if err != nil {
			return 0, mpErr(what, err)
		}
		return v, nil
	case c >= msgpcode.Uint8 && c <= msgpcode.Uint64 || msgpcode.IsFixedNum(c) && c <= msgpcode.PosFixedNumHigh:
		v, err := r.dec.DecodeUint64()
		if err != nil {
			return 0, mpErr(what, err)
		}
		return float64(v), nil
	case isInt(c):
		v, err := r.dec.DecodeInt64()
		if err != nil {
			return 0, mpErr(what, err)
		}
		return float64(v), nil
	}
	return 0, fmt.Errorf("%w: %s: want number, got code %#x", ErrMsgpack, what, c)
}

// The integer codes of msgpack, as constants: msgpcode declares them as
// variables, which keeps the compiler from turning the scanner's switch into
// a jump table.
const (
	cUint8  = 0xcc
	cUint16 = 0xcd
	cUint32 = 0xce
	cUint64 = 0xcf
	cInt8   = 0xd0
	cInt16  = 0xd1
	cInt32  = 0xd2
	cInt64  = 0xd3
)

// scanInt decodes the msgpack integer at p[i] (i < len(p)), returning its
// bits as uint64 (negative values sign-extended), whether it is negative, and
// the offset after it. isInt is false when p[i] does not start an integer;
// next is 0 when the integer is truncated.
func scanInt(p []byte, i int) (v uint64, neg bool, next int, isInt bool) {
	c := p[i]
	if c < 0x80 {
		return uint64(c), false, i + 1, true
	}
	if c >= 0xe0 {
		return uint64(int64(int8(c))), true, i + 1, true
	}
	rest := p[i+1:]
	switch c {
	case cUint8:
		if len(rest) < 1 {
			return 0, false, 0, true
		}
		return uint64(rest[0]), false, i + 2, true
	case cUint16:
		if len(rest) < 2 {
			return 0, false, 0, true
		}
		return uint64(binary.BigEndian.Uint16(rest)), false, i + 3, true
	case cUint32:
		if len(rest) < 4 {
			return 0, false, 0, true
		}
		return uint64(binary.BigEndian.Uint32(rest)), false, i + 5, true
	case cUint64:
		if len(rest) < 8 {
			return 0, false, 0, true
		}
		return binary.BigEndian.Uint64(rest), false, i + 9, true
	case cInt8:
		if len(rest) < 1 {
			return 0, false, 0, true
		}
		x := int64(int8(rest[0]))
		return uint64(x), x < 0, i + 2, true
	case cInt16:
		if len(rest) < 2 {
			return 0, false, 0, true
		}
		x := int64(int16(binary.BigEndian.Uint16(rest)))
		return uint64(x), x < 0, i + 3, true
	case cInt32:
		if len(rest) < 4 {
			return 0, false, 0, true
		}
		x := int64(int32(binary.BigEndian.Uint32(rest)))
		return uint64(x), x < 0, i + 5, true
	case cInt64:
		if len(rest) < 8 {
			return 0, false, 0, true
		}
		x := int64(binary.BigEndian.Uint64(rest))
		return uint64(x), x < 0, i + 9, true
	}
	return 0, false, i, false
}
