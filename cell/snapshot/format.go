package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// The file layout (all integers little-endian; "uv" is an unsigned varint,
// "sv" a signed one, "str" a uv length and the bytes):
//
//	header   magic "CRSNAPv\x00" (8 bytes), format version (uint32)
//	body     meta, holders, pods, blocks (below)
//	trailer  body length (uint64), CRC32C of the body (uint32), magic "CRSNEND\x00"
//
//	meta     str cell id, str model, uv block size, uint64 hash fingerprint,
//	         str index layout ("block", "paged"), sv created (unix ns), uv
//	         JetStream stream sequence (0: none)
//	holders  per holder a uv 1, then: str id, str pod, uint8 flags
//	         (1: has seq, 2: has group), uv last seq, sv group, uv blocks,
//	         then per block: uint64 engine hash, sv parent (-1: none, else an
//	         earlier block of the holder), uint8 tiers, uint8 skip,
//	         uv router hashes then uint64 each, uint64 last, uv pending
//	         tokens then uv each; a uv 0 ends the holders
//	pods     uv count, then per pod: uint8 slot, str id (slots increasing)
//	blocks   runs of blocks, each uv count (> 0) then per block: uint64
//	         hash, in the paged layout sv position in the chain and uint64
//	         page (the hash of the page's first block), uv holders, then per
//	         holder: uint8 slot (a pod above), uint8 tiers (0: GPU only); a
//	         uv 0 ends the runs
//
// The checksum is verified before any of the body is read, and the whole
// body's structure (counts, bounds, slots, parents) is checked before
// anything is restored, so a damaged file is refused as a whole. What only
// the restore can see (an engine block twice in a forest) fails Restore,
// whose caller discards the fresh state it restored into.

// Version is the format version this package writes and reads.
const Version uint32 = 1

var (
	magic    = [8]byte{'C', 'R', 'S', 'N', 'A', 'P', 'v', 0}
	endMagic = [8]byte{'C', 'R', 'S', 'N', 'E', 'N', 'D', 0}
	crcTable = crc32.MakeTable(crc32.Castagnoli)
)

const (
	headerLen  = 12
	trailerLen = 20
)

// Errors. Every refusal wraps ErrRefused and one of the others.
var (
	// ErrRefused is wrapped by every reason a snapshot is not loaded.
	ErrRefused = errors.New("snapshot: refused")
	// ErrCorrupt: bad magic, checksum, length or structure.
	ErrCorrupt = errors.New("snapshot: corrupt")
	// ErrVersion: written by another format version.
	ErrVersion = errors.New("snapshot: unsupported format version")
	// ErrForeign: written by another cell, model, block size or hash.
	ErrForeign = errors.New("snapshot: foreign")
	// ErrNone: no snapshot file to load.
	ErrNone = errors.New("snapshot: none found")
)

// refuse wraps kind (ErrCorrupt, ErrVersion, ErrForeign) under ErrRefused.
func refuse(kind error, format string, args ...any) error {
	return fmt.Errorf("%w: %w: %s", ErrRefused, kind, fmt.Sprintf(format, args...))
}

// Identity is what a snapshot must agree on with the cell loading it.
type Identity struct {
	// CellID is the cell's id.
	CellID string
	// Model is the cell's default model (events.default_model).
	Model string
	// BlockSize is the router's block size in tokens.
	BlockSize int
	// HashFingerprint identifies the block hash function at BlockSize
	// (Fingerprint): hashes written by another one would never match.
	HashFingerprint uint64
	// Layout is the index's storage layout ("" is index.LayoutBlock): the
	// paged layout needs each block's place in its chain, which the block
	// layout does not keep, so a snapshot loads only into its own layout.
	Layout index.Layout
}

// layout returns id's layout, "" read as the block layout.
func (id Identity) layout() index.Layout {
	if id.Layout == "" {
		return index.LayoutBlock
	}
	return id.Layout
}

// Meta is a snapshot's header information.
type Meta struct {
	Identity
	// Created is when the snapshot was taken.
	Created time.Time
	// StreamSeq is the last JetStream stream sequence the cell had handled
	// when the snapshot was taken (0: none).
	StreamSeq uint64
}

// Fingerprint returns the hash fingerprint of blockSize: the chained hash
// of a fixed block under the empty keys' seed.
func Fingerprint(blockSize int) (uint64, error) {
	h, err := blockhash.NewHasher(blockSize)
	if err != nil {
		return 0, err
	}
	toks := make([]uint32, blockSize)
	for i := range toks {
		toks[i] = uint32(i*2654435761) ^ 0x5bd1e995
	}
	out := h.Extend(blockhash.Seed(blockhash.Keys{}), toks, nil)
	if len(out) != 1 {
		return 0, fmt.Errorf("snapshot: fingerprint: %d hashes for one block", len(out))
	}
	return uint64(out[0]), nil
}

// check refuses a snapshot whose identity differs from want.
func (id Identity) check(want Identity) error {
	switch {
	case id.CellID != want.CellID:
		return refuse(ErrForeign, "written by cell %q, this is cell %q", id.CellID, want.CellID)
	case id.Model != want.Model:
		return refuse(ErrForeign, "written for default model %q, this cell has %q", id.Model, want.Model)
	case id.BlockSize != want.BlockSize:
		return refuse(ErrForeign, "written at block size %d, this cell has %d", id.BlockSize, want.BlockSize)
	case id.HashFingerprint != want.HashFingerprint:
		return refuse(ErrForeign, "hash fingerprint %#x, this cell's is %#x", id.HashFingerprint, want.HashFingerprint)
	case id.layout() != want.layout():
		return refuse(ErrForeign, "written from the %s index layout, this cell's index is %s", id.layout(), want.layout())
	}
	return nil
}

// appendHeader appends the header.
func appendHeader(b []byte) []byte {
	b = append(b, magic[:]...)
	return binary.LittleEndian.AppendUint32(b, Version)
}

// appendTrailer appends the trailer of a body of n bytes with checksum sum.
func appendTrailer(b []byte, n uint64, sum uint32) []byte {
	b = binary.LittleEndian.AppendUint64(b, n)
	b = binary.LittleEndian.AppendUint32(b, sum)
	return append(b, endMagic[:]...)
}

// body checks the header and trailer of data and returns the body.
func body(data []byte) ([]byte, error) {
	if len(data) < headerLen+trailerLen {
		return nil, refuse(ErrCorrupt, "%d bytes is shorter than header and trailer", len(data))
	}
	if [8]byte(data[:8]) != magic {
		return nil, refuse(ErrCorrupt, "not a cell snapshot (bad magic)")
	}
	if v := binary.LittleEndian.Uint32(data[8:12]); v != Version {
		return nil, refuse(ErrVersion, "format version %d, this build reads %d", v, Version)
	}
	t := data[len(data)-trailerLen:]
	if [8]byte(t[12:20]) != endMagic {
		return nil, refuse(ErrCorrupt, "truncated (no end marker)")
	}
	n := binary.LittleEndian.Uint64(t[:8])
	b := data[headerLen : len(data)-trailerLen]
	if n != uint64(len(b)) {
		return nil, refuse(ErrCorrupt, "body is %d bytes, trailer says %d", len(b), n)
	}
	if sum := crc32.Checksum(b, crcTable); sum != binary.LittleEndian.Uint32(t[8:12]) {
		return nil, refuse(ErrCorrupt, "checksum mismatch")
	}
	return b, nil
}
