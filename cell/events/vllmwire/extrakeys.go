package vllmwire

import (
	"encoding/hex"
	"fmt"
	"math"
	"strconv"
)

// readExtraKeys reads extra_keys: nil, or an array with one entry per block,
// each nil or an arbitrary value. It returns one string per entry (reusing
// dst's capacity), present false for nil. The flattening is deterministic:
//
//   - nil is "";
//   - a string is itself, unquoted (so a string survives an encode/decode
//     round trip unchanged);
//   - any other value is rendered as text: integers in decimal, floats in
//     Go's shortest 'g' form, true/false, nil inside containers as nil,
//     strings inside containers double-quoted with Go escapes, bytes as 0x
//     followed by lower-case hex, arrays as [a,b], maps as {k:v,...} in wire
//     order, extension values as ext(type:0xhex).
//
// For example the vLLM tuple ("mmhash", 0) of a multimodal block arrives as
// the array ["mmhash", 0] and becomes `["mmhash",0]`.
func (r *reader) readExtraKeys(dst []string) (out []string, present bool, err error) {
	const what = "extra_keys"
	n, err := r.arrayLen(what, r.lim.MaxBlocksPerEvent)
	if err != nil || n < 0 {
		return dst, false, err
	}
	dst = dst[:0]
	if dst == nil {
		dst = make([]string, 0, n)
	}
	i := r.pos()
	for k := 0; k < n; k++ {
		h, err := readHeader(r.buf, i)
		if err != nil {
			return dst, true, fmt.Errorf("%w (%s[%d])", err, what, k)
		}
		var s string
		switch h.kind {
		case kNil:
			i = h.total
		case kStr:
			if h.n > r.lim.MaxStringLen {
				return dst, true, fmt.Errorf("%w: %s[%d]: %d bytes, limit %d", ErrTooLarge, what, k, h.n, r.lim.MaxStringLen)
			}
			s = string(r.buf[h.body:h.total])
			i = h.total
		default:
			r.render, i, err = r.renderAt(r.render[:0], i, 0)
			if err != nil {
				return dst, true, fmt.Errorf("%w (%s[%d])", err, what, k)
			}
			s = string(r.render)
		}
		dst = append(dst, s)
	}
	r.seek(i)
	return dst, true, nil
}

// renderAt appends the text form of the value at buf[i] to dst and returns the
// offset after the value. depth counts the containers around the value.
func (r *reader) renderAt(dst []byte, i, depth int) ([]byte, int, error) {
	p := r.buf
	h, err := readHeader(p, i)
	if err != nil {
		return dst, 0, err
	}
	next := h.total
	switch h.kind {
	case kNil:
		dst = append(dst, "nil"...)
	case kBool:
		dst = strconv.AppendBool(dst, h.bits == 1)
	case kUint:
		dst = strconv.AppendUint(dst, h.bits, 10)
	case kInt:
		dst = strconv.AppendInt(dst, int64(h.bits), 10)
	case kFloat32:
		dst = strconv.AppendFloat(dst, float64(math.Float32frombits(uint32(h.bits))), 'g', -1, 32)
	case kFloat64:
		dst = strconv.AppendFloat(dst, math.Float64frombits(h.bits), 'g', -1, 64)
	case kStr:
		dst = appendQuoted(dst, p[h.body:h.total])
	case kBin:
		dst = append(dst, "0x"...)
		dst = hex.AppendEncode(dst, p[h.body:h.total])
	case kExt:
		dst = append(dst, "ext("...)
		dst = strconv.AppendInt(dst, int64(h.ext), 10)
		dst = append(dst, ":0x"...)
		dst = hex.AppendEncode(dst, p[h.body:h.total])
		dst = append(dst, ')')
	case kArray, kMap:
		if depth >= r.lim.MaxDepth {
			return dst, 0, fmt.Errorf("%w: nesting deeper than %d", ErrTooLarge, r.lim.MaxDepth)
		}
		open, close := byte('['), byte(']')
		if h.kind == kMap {
			open, close = '{', '}'
		}
		dst = append(dst, open)
		next = h.body
		for k := 0; k < h.n; k++ {
			if k > 0 {
				dst = append(dst, ',')
			}
			if h.kind == kMap {
				if dst, next, err = r.renderAt(dst, next, depth+1); err != nil {
					return dst, 0, err
				}
				dst = append(dst, ':')
			}
			if dst, next, err = r.renderAt(dst, next, depth+1); err != nil {
				return dst, 0, err
			}
		}
		dst = append(dst, close)
	}
	if len(dst) > r.lim.MaxStringLen {
		return dst, 0, fmt.Errorf("%w: rendered extra key longer than %d bytes", ErrTooLarge, r.lim.MaxStringLen)
	}
	return dst, next, nil
}

// appendQuoted appends s double-quoted with Go escapes, without converting
// plain printable ASCII to a string first.
func appendQuoted(dst, s []byte) []byte {
	for _, c := range s {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.AppendQuote(dst, string(s))
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
