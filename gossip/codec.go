package gossip

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/RoaringBitmap/roaring/v2"
)

// Roaring serialisation cookies (from the portable RoaringFormatSpec), read
// here to bound the container count before the library allocates.
const (
	roaringCookieNoRun = 12346
	roaringCookieRun   = 12347
)

// EncodeHeader returns the wire form of h.
func EncodeHeader(h *Header) []byte {
	e := newEncoder(typeHeader, 64+len(h.Cell)+len(h.Node))
	e.str(h.Cell)
	e.str(h.Node)
	e.uv(h.Epoch)
	e.uv(h.Gen)
	e.uv(h.Seq)
	e.load(h.Load)
	e.params(h.Params)
	e.uv(h.Elements)
	return e.b
}

// DecodeHeader parses a header. It returns an error wrapping ErrMalformed for
// any input that EncodeHeader could not have produced from a valid Header.
func DecodeHeader(b []byte) (*Header, error) {
	d := newDecoder(b, typeHeader, "header")
	h := &Header{Cell: d.cell(), Node: d.str("node", MaxNodeNameLen)}
	h.Epoch = d.uv("epoch", math.MaxUint64)
	h.Gen = d.uv("gen", math.MaxUint64)
	h.Seq = d.uv("seq", math.MaxUint64)
	h.Load = d.load()
	if h.Gen == 0 {
		h.Params = d.params()
		if d.err == nil && h.Params != (Params{}) {
			d.fail("header: params without a generation")
		}
	} else {
		h.Params = d.validParams()
	}
	h.Elements = d.uv("elements", math.MaxUint64)
	if err := d.done("header"); err != nil {
		return nil, err
	}
	return h, nil
}

// EncodeSnapshot returns the wire form of s; the bits travel raw (a Bloom
// filter near its design fill does not compress).
func EncodeSnapshot(s *Snapshot) []byte {
	e := newEncoder(typeSnapshot, 64+len(s.Cell)+len(s.Node)+8*len(s.Bits))
	e.str(s.Cell)
	e.str(s.Node)
	e.uv(s.Epoch)
	e.uv(s.Gen)
	e.params(s.Params)
	e.uv(s.Elements)
	for _, w := range s.Bits {
		e.u64le(w)
	}
	return e.b
}

// DecodeSnapshot parses a snapshot. The number of words allocated is checked
// against both MaxFilterBits and the bytes actually present first.
func DecodeSnapshot(b []byte) (*Snapshot, error) {
	d := newDecoder(b, typeSnapshot, "snapshot")
	s := &Snapshot{Cell: d.cell(), Node: d.str("node", MaxNodeNameLen)}
	s.Epoch = d.uv("epoch", math.MaxUint64)
	s.Gen = d.uv("gen", math.MaxUint64)
	if d.err == nil && s.Gen == 0 {
		d.fail("snapshot: generation 0")
	}
	s.Params = d.validParams()
	s.Elements = d.uv("elements", math.MaxUint64)
	if d.err != nil {
		return nil, d.err
	}
	nw := int(s.Params.M / 64)
	if d.remaining() != nw*8 {
		d.fail("snapshot: %d bytes of bits, want %d", d.remaining(), nw*8)
		return nil, d.err
	}
	s.Bits = make([]uint64, nw)
	for i := range s.Bits {
		s.Bits[i] = binary.LittleEndian.Uint64(d.b[d.off:])
		d.off += 8
	}
	if err := d.done("snapshot"); err != nil {
		return nil, err
	}
	return s, nil
}

// EncodeDelta returns the wire form of d, the flipped positions in roaring's
// portable serialisation.
func EncodeDelta(d *Delta) ([]byte, error) {
	rb := d.Flipped
	if rb == nil {
		rb = roaring.New()
	}
	e := newEncoder(typeDelta, 64+len(d.Cell)+len(d.Node)+int(rb.GetSerializedSizeInBytes()))
	e.str(d.Cell)
	e.str(d.Node)
	e.uv(d.Epoch)
	e.uv(d.FromGen)
	e.uv(d.ToGen)
	e.params(d.Params)
	e.uv(d.Elements)
	raw, err := rb.ToBytes()
	if err != nil {
		return nil, fmt.Errorf("gossip: encode delta: %w", err)
	}
	e.b = append(e.b, raw...)
	return e.b, nil
}

// DecodeDelta parses a delta. The roaring payload's container count is
// bounded by the filter size before decoding, the decoded bitmap is
// validated, and every position must lie below Params.M.
func DecodeDelta(b []byte) (*Delta, error) {
	d := newDecoder(b, typeDelta, "delta")
	x := &Delta{Cell: d.cell(), Node: d.str("node", MaxNodeNameLen)}
	x.Epoch = d.uv("epoch", math.MaxUint64)
	x.FromGen = d.uv("from gen", math.MaxUint64)
	x.ToGen = d.uv("to gen", math.MaxUint64)
	if d.err == nil && x.ToGen <= x.FromGen {
		d.fail("delta: to gen %d is not after from gen %d", x.ToGen, x.FromGen)
	}
	x.Params = d.validParams()
	x.Elements = d.uv("elements", math.MaxUint64)
	if d.err != nil {
		return nil, d.err
	}
	raw := d.b[d.off:]
	rb, err := decodeFlipped(raw, x.Params.M)
	if err != nil {
		return nil, err
	}
	x.Flipped = rb
	return x, nil
}

// decodeFlipped decodes a roaring bitmap of positions below m.
func decodeFlipped(raw []byte, m uint64) (rb *roaring.Bitmap, err error) {
	if len(raw) < 8 {
		return nil, fmt.Errorf("%w: delta: roaring payload of %d bytes", ErrMalformed, len(raw))
	}
	cookie := binary.LittleEndian.Uint32(raw)
	var containers uint64
	switch {
	case cookie&0xFFFF == roaringCookieRun:
		containers = uint64(cookie>>16) + 1
	case cookie == roaringCookieNoRun:
		containers = uint64(binary.LittleEndian.Uint32(raw[4:]))
	default:
		return nil, fmt.Errorf("%w: delta: not a roaring bitmap", ErrMalformed)
	}
	if maxC := (m + 65535) / 65536; containers > maxC {
		return nil, fmt.Errorf("%w: delta: %d roaring containers for %d bits", ErrMalformed, containers, m)
	}
	defer func() {
		// The roaring decoder is not hardened against every hostile
		// input; a panic inside it is a malformed message here.
		if r := recover(); r != nil {
			rb, err = nil, fmt.Errorf("%w: delta: roaring: %v", ErrMalformed, r)
		}
	}()
	rb = roaring.New()
	n, err := rb.ReadFrom(newByteReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%w: delta: roaring: %v", ErrMalformed, err)
	}
	if n != int64(len(raw)) {
		return nil, fmt.Errorf("%w: delta: %d trailing bytes", ErrMalformed, int64(len(raw))-n)
	}
	if err := rb.Validate(); err != nil {
		return nil, fmt.Errorf("%w: delta: roaring: %v", ErrMalformed, err)
	}
	if !rb.IsEmpty() && uint64(rb.Maximum()) >= m {
		return nil, fmt.Errorf("%w: delta: flipped position %d is beyond %d bits", ErrMalformed, rb.Maximum(), m)
	}
	return rb, nil
}

// EncodeFetch returns the wire form of r.
func EncodeFetch(r *FetchRequest) []byte {
	e := newEncoder(typeFetch, 32+len(r.From)+len(r.Cell))
	e.str(r.From)
	e.str(r.Cell)
	e.uv(r.Epoch)
	e.uv(r.Gen)
	return e.b
}

// DecodeFetch parses a fetch request.
func DecodeFetch(b []byte) (*FetchRequest, error) {
	d := newDecoder(b, typeFetch, "fetch")
	r := &FetchRequest{From: d.str("from", MaxNodeNameLen)}
	if d.err == nil && r.From == "" {
		d.fail("fetch: empty requester")
	}
	r.Cell = d.cell()
	r.Epoch = d.uv("epoch", math.MaxUint64)
	r.Gen = d.uv("gen", math.MaxUint64)
	if err := d.done("fetch"); err != nil {
		return nil, err
	}
	return r, nil
}

// EncodeCellState returns the wire form of s: the header and the optional
// snapshot, each length-prefixed in its own wire form.
func EncodeCellState(s *CellState) []byte {
	h := EncodeHeader(&s.Header)
	var snap []byte
	if s.Snapshot != nil {
		snap = EncodeSnapshot(s.Snapshot)
	}
	e := newEncoder(typeState, len(h)+len(snap)+16)
	e.blob(h)
	e.blob(snap)
	return e.b
}

// DecodeCellState parses a push/pull state; the snapshot, when present, must be
// of the header's cell, epoch and generation.
func DecodeCellState(b []byte) (*CellState, error) {
	d := newDecoder(b, typeState, "state")
	hb := d.bytes("state header", 1024)
	sb := d.bytes("state snapshot", MaxFilterBits/8+1024)
	if err := d.done("state"); err != nil {
		return nil, err
	}
	h, err := DecodeHeader(hb)
	if err != nil {
		return nil, err
	}
	st := &CellState{Header: *h}
	if len(sb) > 0 {
		s, err := DecodeSnapshot(sb)
		if err != nil {
			return nil, err
		}
		if s.Cell != h.Cell || s.Node != h.Node || s.Epoch != h.Epoch || s.Gen != h.Gen || s.Params != h.Params {
			return nil, fmt.Errorf("%w: state: snapshot %s/%d/%d does not match header %s/%d/%d",
				ErrMalformed, s.Cell, s.Epoch, s.Gen, h.Cell, h.Epoch, h.Gen)
		}
		st.Snapshot = s
	}
	return st, nil
}
