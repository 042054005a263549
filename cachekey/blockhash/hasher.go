package blockhash

import (
	"fmt"
	"slices"
)

// Block sizes, in tokens.
const (
	// DefaultBlockSize is the block size of vLLM and SGLang by default.
	DefaultBlockSize = 16
	// MinBlockSize is the smallest block size NewHasher accepts.
	MinBlockSize = 1
	// MaxBlockSize is the largest block size NewHasher accepts.
	MaxBlockSize = 1 << 16
)

// Hasher cuts token ids into blocks of BlockSize tokens and names every full
// block by its chained hash. A Hasher is a plain value: it holds no state
// between calls, and its methods may be called concurrently.
type Hasher struct {
	// BlockSize is the number of tokens per block, in [MinBlockSize,
	// MaxBlockSize]. It must equal the engine's KV block size, or the
	// router's blocks will not line up with the engine's (engines use 16;
	// the Mooncake trace uses 512).
	BlockSize int
}

// DefaultHasher returns a Hasher with DefaultBlockSize.
func DefaultHasher() Hasher {
	return Hasher{BlockSize: DefaultBlockSize}
}

// NewHasher returns a Hasher for blocks of blockSize tokens, or an error if
// blockSize is outside [MinBlockSize, MaxBlockSize].
func NewHasher(blockSize int) (Hasher, error) {
	h := Hasher{BlockSize: blockSize}
	if err := h.Validate(); err != nil {
		return Hasher{}, err
	}
	return h, nil
}

// Validate returns an error naming the field if h.BlockSize is outside
// [MinBlockSize, MaxBlockSize].
func (h Hasher) Validate() error {
	if h.BlockSize < MinBlockSize || h.BlockSize > MaxBlockSize {
		return fmt.Errorf("blockhash: BlockSize %d out of range [%d, %d]", h.BlockSize, MinBlockSize, MaxBlockSize)
	}
	return nil
}

// NumBlocks returns the number of full blocks in nTokens tokens, which is the
// number of hashes Chain appends for them. It is 0 for a negative nTokens.
// It panics if h is not valid.
func (h Hasher) NumBlocks(nTokens int) int {
	h.mustValid()
	if nTokens <= 0 {
		return 0
	}
	return nTokens / h.BlockSize
}

// Chain appends to dst the chained hash of every full block of tokens, the
// first block's parent being seed (normally Seed(keys)), and returns the
// extended slice. It appends exactly NumBlocks(len(tokens)) hashes; the
// partial tail block, if any, is ignored. Chain of a longer token list starts
// with Chain of any shorter prefix of it. Chain allocates only if dst lacks
// the capacity, and then once. It does not retain tokens or dst. It panics if
// h is not valid (a zero Hasher, for example).
func (h Hasher) Chain(seed Hash, tokens []Token, dst []Hash) []Hash {
	return h.Extend(seed, tokens, dst)
}

// Extend is Chain continuing from a known parent: it appends to dst the
// chained hashes of the full blocks of tokens, where the first of them
// directly follows the block whose hash is parent. It serves engine events
// that report the tokens of new blocks together with their parent block: if
// a is block-aligned, Extend(Chain(seed, a)[last], b) equals the tail of
// Chain(seed, a++b) after the hashes of a. The parent of a first block is
// the chain's Seed; passing the reserved zero Hash is allowed (it is hashed
// like any other value) but names no real prefix.
func (h Hasher) Extend(parent Hash, tokens []Token, dst []Hash) []Hash {
	n := h.NumBlocks(len(tokens))
	dst = slices.Grow(dst, n)
	bs := h.BlockSize
	for i := 0; i < n; i++ {
		parent = Mix(parent, ChunkHash(tokens[i*bs:(i+1)*bs:(i+1)*bs]))
		dst = append(dst, parent)
	}
	return dst
}

// mustValid panics if h is not valid: using a Hasher with a bad BlockSize is
// a programming error (the configuration should have been validated), and
// silently returning no hashes would make every lookup miss.
func (h Hasher) mustValid() {
	if err := h.Validate(); err != nil {
		panic(err)
	}
}
