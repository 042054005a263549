package blockhash

import "math/bits"

// Hash is a chained block hash: it stands for a whole prefix of tokens (every
// block up to and including this one) under one set of cache-identity Keys.
// The zero Hash is reserved: it means "no block" (for example the parent of a
// first block) and is never produced by Chain.
type Hash uint64

// MixZero is the value Mix returns when the underlying hash of parent||chunk
// happens to be zero, so that Mix never returns the reserved zero Hash. It is
// the first 64 bits of the fractional part of sqrt(2) (SHA-512's first
// initial value), chosen only for being a fixed, nonzero, unremarkable number.
const MixZero Hash = 0x6a09e667f3bcc908

// Mix returns the chained hash of a block whose parent (the hash of every
// block before it, or the chain's Seed for a first block) is parent and whose
// own chunk hash is chunk.
//
// Mix equals xxh3 (64-bit, no seed) over the 16 bytes parent||chunk, both
// little-endian: a full 128-to-64-bit avalanche, so changing any bit of either
// input changes about half the output bits. Because the parent already
// stands for its whole prefix, the result stands for the prefix extended by
// this block. Mix is never zero: a zero result is replaced by MixZero.
//
// Mix computes xxh3's 16-byte case directly, following the XXH3
// specification (the 9-to-16-byte path with the default secret), instead of
// calling xxh3.Hash: the chain is a serial dependency, so the call and the
// length dispatch would sit on its critical path. A test checks it against
// xxh3.Hash on random inputs.
func Mix(parent Hash, chunk uint64) Hash {
	lo := uint64(parent) ^ mixKeyLo
	hi := chunk ^ mixKeyHi
	mh, ml := bits.Mul64(lo, hi)
	x := 16 + bits.ReverseBytes64(lo) + hi + (mh ^ ml)
	// The XXH3 avalanche.
	x ^= x >> 37
	x *= 0x165667919e3779f9
	x ^= x >> 32
	return nonZero(x, MixZero)
}

// mixKeyLo and mixKeyHi are the words of XXH3's default secret that its
// 9-to-16-byte path folds into the first and last eight input bytes
// (secret words at byte offsets 24^32 and 40^48).
const (
	mixKeyLo = 0x1f67b3b7a4a44072 ^ 0x78e5c0cc4ee679cb
	mixKeyHi = 0x2172ffcc7dd05a82 ^ 0x8e2443f7744608b8
)

// nonZero returns h as a Hash, or replacement when h is zero.
func nonZero(h uint64, replacement Hash) Hash {
	if h == 0 {
		return replacement
	}
	return Hash(h)
}
