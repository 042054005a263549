// Package blockhash turns token ids into chained block hashes, the names under
// which the cell's index records which pod holds which KV-cache block.
//
// # Model
//
// A prompt's token ids are cut into blocks of Hasher.BlockSize tokens (engines
// such as vLLM use 16; the Mooncake trace uses 512). Only full blocks are
// hashed: a partial tail block is never cached by an engine as a reusable
// block, so it has no name.
//
// Each full block i gets two numbers:
//
//   - the chunk hash c_i = ChunkHash(tokens of block i), an xxh3 hash of the
//     block's token ids as little-endian uint32 bytes, which depends on that
//     block alone;
//   - the chained hash h_i = Mix(h_{i-1}, c_i), with h_{-1} = Seed(keys).
//
// Because h_i is a function of h_{i-1} and c_i, and h_{i-1} is in turn a
// function of h_{i-2} and c_{i-1}, and so on down to the seed, h_i is a
// function of the seed and every block 0..i: it stands for the whole prefix,
// not for one block. Two requests share h_i only if (up to 64-bit collisions)
// they share the same keys and the same first (i+1)*BlockSize tokens. This is
// what lets the index answer "how deep is the longest cached prefix on each
// pod" by looking up the query's hashes alone: hits form a contiguous prefix.
//
// # Cache identity
//
// The same tokens do not mean the same KV cache under a different model, LoRA
// adapter, tenant cache salt, multimodal inputs, or (for looped or router
// transformers) route template and virtual layer. Keys gathers these, and
// Seed folds them into the parent of the first block, so every hash of a
// chain changes when any key changes. The encoding fed to the seed hash is
// unambiguous (every string and list is length-prefixed), so ("ab", "c") and
// ("a", "bc") give different seeds. See Keys for which absent and empty values
// are deliberately treated as equal.
//
// # Zero
//
// The zero Hash is reserved to mean "no block". Seed and Mix never return it:
// an output of zero from the underlying 64-bit hash is replaced by a fixed
// nonzero constant (a one-in-2^64 event that merely adds one more collision).
//
// # Cost
//
// Chain does one xxh3 over BlockSize*4 bytes and one 16-byte xxh3 per block,
// appends into a caller-supplied slice and allocates nothing when that slice
// has room. The hashes are stable across processes and platforms (they do not
// depend on the machine's byte order), so cells and global replicas agree.
package blockhash
