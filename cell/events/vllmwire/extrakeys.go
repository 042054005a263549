package vllmwire

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"math"
	"strconv"

	"github.com/cellrouter/cellrouter/cell/events"
)

// readExtraKeys reads extra_keys: nil, or an array with one entry per
// block. vLLM sends each entry as nil (the block has no extra keys) or a
// tuple, which msgpack carries as an array, of the keys mixed into the
// block's hash: strings (an adapter's name, a cache salt), integers (older
// vLLM's adapter id), pairs (a multimodal identifier and its offset), bytes
// (a prompt-embeddings digest). Each entry becomes one events.BlockKeys,
// reusing dst's capacity: nil is an empty entry, an array gives one element
// per item, and any other value (a bare string, as some publishers send)
// one element. Elements are:
//
//   - a string: KeyString with the string as Text;
//   - an integer that fits int64: KeyInt;
//   - anything else: KeyOther, with Raw holding its msgpack bytes and Text
//     a canonical rendering: integers in decimal, floats in Go's shortest
//     'g' form, true/false, nil, strings double-quoted with Go escapes, bytes
//     as 0x followed by lower-case hex, arrays as [a,b], maps as {k:v,...}
//     in wire order, extension values as ext(type:0xhex). The vLLM pair
//     ("mmhash", 0) becomes `["mmhash",0]`.
func (r *reader) readExtraKeys(dst []events.BlockKeys) (out []events.BlockKeys, present bool, err error) {
	const what = "extra_keys"
	n, err := r.arrayLen(what, r.lim.MaxBlocksPerEvent)
	if err != nil || n < 0 {
		return dst[:0], false, err
	}
	if cap(dst) < n {
		grown := make([]events.BlockKeys, n)
		copy(grown, dst[:cap(dst)])
		dst = grown
	}
	dst = dst[:n]
	i := r.pos()
	for k := 0; k < n; k++ {
		h, err := readHeader(r.buf, i)
		if err != nil {
			return dst, true, fmt.Errorf("%w (%s[%d])", err, what, k)
		}
		keys := dst[k][:0]
		switch h.kind {
		case kNil:
			i = h.total
		case kArray:
			if h.n > r.lim.MaxBlocksPerEvent {
				return dst, true, fmt.Errorf("%w: %s[%d]: %d elements, limit %d", ErrTooLarge, what, k, h.n, r.lim.MaxBlocksPerEvent)
			}
			i = h.body
			for e := 0; e < h.n; e++ {
				var key events.ExtraKey
				if key, i, err = r.extraKey(i); err != nil {
					return dst, true, fmt.Errorf("%w (%s[%d][%d])", err, what, k, e)
				}
				keys = append(keys, key)
			}
		default:
			var key events.ExtraKey
			if key, i, err = r.extraKey(i); err != nil {
				return dst, true, fmt.Errorf("%w (%s[%d])", err, what, k)
			}
			keys = append(keys, key)
		}
		dst[k] = keys
	}
	r.seek(i)
	return dst, true, nil
}

// extraKey reads the extra-key element at buf[i] and returns it with the
// offset after it.
func (r *reader) extraKey(i int) (events.ExtraKey, int, error) {
	h, err := readHeader(r.buf, i)
	if err != nil {
		return events.ExtraKey{}, 0, err
	}
	switch {
	case h.kind == kStr:
		if h.n > r.lim.MaxStringLen {
			return events.ExtraKey{}, 0, fmt.Errorf("%w: %d-byte string, limit %d", ErrTooLarge, h.n, r.lim.MaxStringLen)
		}
		return events.ExtraKey{Kind: events.KeyString, Text: string(r.buf[h.body:h.total])}, h.total, nil
	case h.kind == kInt || (h.kind == kUint && h.bits <= math.MaxInt64):
		return events.ExtraKey{Kind: events.KeyInt, Int: int64(h.bits)}, h.total, nil
	}
	var next int
	r.render, next, err = r.renderAt(r.render[:0], i, 0)
	if err != nil {
		return events.ExtraKey{}, 0, err
	}
	return events.ExtraKey{Kind: events.KeyOther, Text: string(r.render), Raw: bytes.Clone(r.buf[i:next])}, next, nil
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
