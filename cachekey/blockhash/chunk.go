package blockhash

import (
	"encoding/binary"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Token is one token id as produced by a model's tokenizer.
type Token = uint32

// littleEndian reports whether this machine stores a uint32 with its least
// significant byte first, in which case a []Token already is its own
// little-endian byte encoding and can be hashed in place.
var littleEndian = func() bool {
	x := uint32(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// ChunkHash returns the hash of one block's tokens: xxh3 (64-bit, no seed) of
// the tokens' little-endian uint32 bytes. It depends on the block's tokens
// alone, not on their position or on what came before; Mix chains it to its
// parent. The result is the same on every platform. It may be called with any
// number of tokens (Hasher calls it with exactly BlockSize) and does not
// allocate.
func ChunkHash(tokens []Token) uint64 {
	if littleEndian {
		return xxh3.Hash(tokenBytes(tokens))
	}
	return chunkHashPortable(tokens)
}

// tokenBytes views tokens as their in-memory bytes without copying. On a
// little-endian machine those are the little-endian encoding of the tokens.
// The returned slice aliases tokens and must not outlive it.
func tokenBytes(tokens []Token) []byte {
	if len(tokens) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(tokens))), len(tokens)*4)
}

// portableBuf is the number of bytes chunkHashPortable encodes at a time.
const portableBuf = 256

// chunkHashPortable computes ChunkHash on any byte order: it encodes the
// tokens little-endian into a stack buffer and streams them into xxh3, whose
// streaming result equals its one-shot result over the same bytes. It is the
// path used on big-endian machines and is tested on every machine.
func chunkHashPortable(tokens []Token) uint64 {
	if len(tokens)*4 <= portableBuf {
		var b [portableBuf]byte
		for i, t := range tokens {
			binary.LittleEndian.PutUint32(b[i*4:], t)
		}
		return xxh3.Hash(b[:len(tokens)*4])
	}
	var h xxh3.Hasher
	h.Reset()
	var b [portableBuf]byte
	for len(tokens) > 0 {
		n := min(len(tokens), portableBuf/4)
		for i, t := range tokens[:n] {
			binary.LittleEndian.PutUint32(b[i*4:], t)
		}
		_, _ = h.Write(b[:n*4])
		tokens = tokens[n:]
	}
	return h.Sum64()
}
