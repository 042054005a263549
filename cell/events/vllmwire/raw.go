package vllmwire

import (
	"encoding/binary"
	"fmt"

	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// valueKind classifies a msgpack value for the raw scanners.
type valueKind uint8

const (
	kNil valueKind = iota
	kBool
	kUint
	kInt
	kFloat32
	kFloat64
	kStr
	kBin
	kArray
	kMap
	kExt
)

// header describes the msgpack value starting at some offset: its kind, its
// length (bytes for str, bin and ext, elements for array, entries for map),
// the offset of its body, and for scalars the scalar itself.
type header struct {
	kind  valueKind
	n     int
	body  int
	bits  uint64 // integer bits, float bits or bool (1)
	ext   int8   // ext type
	total int    // offset after the value for scalars, str, bin and ext
}

// readHeader decodes the header of the value at p[i]. Its error wraps
// ErrMsgpack for a truncated header or body and for the unused code 0xc1.
func readHeader(p []byte, i int) (header, error) {
	if i >= len(p) {
		return header{}, truncated("value")
	}
	c := p[i]
	if v, neg, next, ok := scanInt(p, i); ok {
		if next == 0 {
			return header{}, truncated("integer")
		}
		k := kUint
		if neg {
			k = kInt
		}
		return header{kind: k, bits: v, total: next}, nil
	}
	var h header
	lenBytes := 0
	switch {
	case c == msgpcode.Nil:
		return header{kind: kNil, total: i + 1}, nil
	case c == msgpcode.False || c == msgpcode.True:
		return header{kind: kBool, bits: uint64(c & 1), total: i + 1}, nil
	case c == msgpcode.Float:
		if len(p)-i < 5 {
			return header{}, truncated("float")
		}
		return header{kind: kFloat32, bits: uint64(binary.BigEndian.Uint32(p[i+1:])), total: i + 5}, nil
	case c == msgpcode.Double:
		if len(p)-i < 9 {
			return header{}, truncated("float")
		}
		return header{kind: kFloat64, bits: binary.BigEndian.Uint64(p[i+1:]), total: i + 9}, nil
	case msgpcode.IsFixedString(c):
		h = header{kind: kStr, n: int(c & msgpcode.FixedStrMask)}
	case msgpcode.IsFixedArray(c):
		h = header{kind: kArray, n: int(c & msgpcode.FixedArrayMask)}
	case msgpcode.IsFixedMap(c):
		h = header{kind: kMap, n: int(c & msgpcode.FixedMapMask)}
	case c == msgpcode.Str8 || c == msgpcode.Bin8 || c == msgpcode.Ext8:
		lenBytes = 1
	case c == msgpcode.Str16 || c == msgpcode.Bin16 || c == msgpcode.Ext16 || c == msgpcode.Array16 || c == msgpcode.Map16:
		lenBytes = 2
	case c == msgpcode.Str32 || c == msgpcode.Bin32 || c == msgpcode.Ext32 || c == msgpcode.Array32 || c == msgpcode.Map32:
		lenBytes = 4
	case c >= msgpcode.FixExt1 && c <= msgpcode.FixExt16:
		h = header{kind: kExt, n: 1 << (c - msgpcode.FixExt1)}
	default:
		return header{}, fmt.Errorf("%w: invalid code %#x", ErrMsgpack, c)
	}
	h.body = i + 1
	if lenBytes > 0 {
		if len(p)-i-1 < lenBytes {
			return header{}, truncated("length")
		}
		b := p[i+1 : i+1+lenBytes]
		switch lenBytes {
		case 1:
			h.n = int(b[0])
		case 2:
			h.n = int(binary.BigEndian.Uint16(b))
		default:
			h.n = int(binary.BigEndian.Uint32(b))
		}
		h.body += lenBytes
		switch c {
		case msgpcode.Str8, msgpcode.Str16, msgpcode.Str32:
			h.kind = kStr
		case msgpcode.Bin8, msgpcode.Bin16, msgpcode.Bin32:
			h.kind = kBin
		case msgpcode.Array16, msgpcode.Array32:
			h.kind = kArray
		case msgpcode.Map16, msgpcode.Map32:
			h.kind = kMap
		default:
			h.kind = kExt
		}
	}
	switch h.kind {
	case kExt:
		if h.body >= len(p) {
			return header{}, truncated("ext")
		}
		h.ext = int8(p[h.body])
		h.body++
		fallthrough
	case kStr, kBin:
		if h.n > len(p)-h.body {
			return header{}, truncated("string")
		}
		h.total = h.body + h.n
	case kArray:
		if h.n > len(p)-h.body {
			return header{}, truncated("array")
		}
	case kMap:
		if h.n > (len(p)-h.body)/2 {
			return header{}, truncated("map")
		}
	}
	return h, nil
}

// skipAt returns the offset after the value at p[i], which sits depth
// containers deep inside the value being skipped. Nesting beyond maxDepth is
// ErrTooLarge.
func skipAt(p []byte, i, depth, maxDepth int) (int, error) {
	h, err := readHeader(p, i)
	if err != nil {
		return 0, err
	}
	switch h.kind {
	case kArray, kMap:
		if depth >= maxDepth {
			return 0, fmt.Errorf("%w: nesting deeper than %d", ErrTooLarge, maxDepth)
		}
		n := h.n
		if h.kind == kMap {
			n *= 2
		}
		j := h.body
		for k := 0; k < n; k++ {
			if j, err = skipAt(p, j, depth+1, maxDepth); err != nil {
				return 0, err
			}
		}
		return j, nil
	}
	return h.total, nil
}

// skip consumes the next value, whatever it is, within the depth limit.
func (r *reader) skip(what string) error {
	next, err := skipAt(r.buf, r.pos(), 0, r.lim.MaxDepth)
	if err != nil {
		return fmt.Errorf("%w (skipping %s)", err, what)
	}
	r.seek(next)
	return nil
}
