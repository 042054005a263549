package vllmwire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// minHashBytes is the shortest raw-bytes block hash accepted. Engines that
// hash with SHA-256 send 32 bytes; any length from 8 up to
// Limits.MaxStringLen is accepted and reduced to its last 8 bytes,
// big-endian, which equals the integer form of the same hash.
const minHashBytes = 8

// hashAt decodes the block hash at p[i]: an unsigned integer, a negative
// integer (its two's-complement bits, as SGLang sends hashes above 2^63), or
// a str or bin of at least 8 bytes (the last 8, big-endian). It returns the
// offset after the hash.
func (r *reader) hashAt(i int, what string) (uint64, int, error) {
	p := r.buf
	if i >= len(p) {
		return 0, 0, truncated(what)
	}
	if v, _, next, ok := scanInt(p, i); ok {
		if next == 0 {
			return 0, 0, truncated(what)
		}
		return v, next, nil
	}
	h, err := readHeader(p, i)
	if err != nil {
		return 0, 0, fmt.Errorf("%w (%s)", err, what)
	}
	switch h.kind {
	case kStr, kBin:
	case kNil:
		return 0, 0, fmt.Errorf("%w: %s: nil hash", ErrBadEvent, what)
	default:
		return 0, 0, fmt.Errorf("%w: %s: want integer or bytes, got code %#x", ErrMsgpack, what, p[i])
	}
	if h.n > r.lim.MaxStringLen {
		return 0, 0, fmt.Errorf("%w: %s: %d-byte hash, limit %d", ErrTooLarge, what, h.n, r.lim.MaxStringLen)
	}
	if h.n < minHashBytes {
		return 0, 0, fmt.Errorf("%w: %s: %d-byte hash, want at least %d", ErrBadEvent, what, h.n, minHashBytes)
	}
	return binary.BigEndian.Uint64(p[h.total-8 : h.total]), h.total, nil
}

// appendHashes reads an array of block hashes onto dst[:0]. Nil reads as no
// hashes; present is false then.
func (r *reader) appendHashes(dst []uint64, what string) (out []uint64, present bool, err error) {
	n, err := r.arrayLen(what, r.lim.MaxBlocksPerEvent)
	if err != nil {
		return dst, false, err
	}
	dst = dst[:0]
	if n < 0 {
		return dst, false, nil
	}
	if cap(dst) < n {
		dst = make([]uint64, 0, n)
	}
	i := r.pos()
	for k := 0; k < n; k++ {
		var v uint64
		if v, i, err = r.hashAt(i, what); err != nil {
			return dst, true, err
		}
		dst = append(dst, v)
	}
	r.seek(i)
	return dst, true, nil
}

// hashVal reads one hash or nil; ok is false for nil.
func (r *reader) hashVal(what string) (v uint64, ok bool, err error) {
	if isNil, err := r.tryNil(what); err != nil || isNil {
		return 0, false, err
	}
	v, next, err := r.hashAt(r.pos(), what)
	if err != nil {
		return 0, false, err
	}
	r.seek(next)
	return v, true, nil
}

// appendTokens reads an array of token ids onto dst[:0]. Every id must be an
// integer in [0, 2^32). Nil reads as no tokens; present is false then.
func (r *reader) appendTokens(dst []uint32, what string) (out []uint32, present bool, err error) {
	n, err := r.arrayLen(what, r.lim.MaxTokensPerEvent)
	if err != nil {
		return dst, false, err
	}
	dst = dst[:0]
	if n < 0 {
		return dst, false, nil
	}
	if cap(dst) < n {
		dst = make([]uint32, 0, n)
	}
	p := r.buf
	i := r.pos()
	for k := 0; k < n; k++ {
		if i >= len(p) {
			return dst, true, truncated(what)
		}
		// Fast path: positive fixint, the commonest token encoding for
		// small vocabularies and for the first 128 ids.
		if c := p[i]; c < 0x80 {
			dst = append(dst, uint32(c))
			i++
			continue
		}
		v, neg, next, ok := scanInt(p, i)
		switch {
		case !ok:
			return dst, true, fmt.Errorf("%w: %s[%d]: want integer, got code %#x", ErrMsgpack, what, k, p[i])
		case next == 0:
			return dst, true, truncated(what)
		case neg || v > math.MaxUint32:
			return dst, true, fmt.Errorf("%w: %s[%d]: token id out of uint32 range", ErrBadEvent, what, k)
		}
		dst = append(dst, uint32(v))
		i = next
	}
	r.seek(i)
	return dst, true, nil
}
