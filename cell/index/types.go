package index

import (
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// MaxPods is the number of pod slots in one cell: one bit each in a HostBitmap.
const MaxPods = 256

// Slot identifies a pod (or one data-parallel rank of a pod) inside the index.
type Slot uint8

// Tier says where an engine keeps a block.
type Tier uint8

// Tiers, in the order an engine prefers them.
const (
	TierGPU Tier = iota
	TierCPU
	TierStorage
)

// BlockHash is the router's chained block hash.
type BlockHash = blockhash.Hash

// PageSize is the number of chain positions in one page of the paged
// layout: the blocks at positions [k*PageSize, (k+1)*PageSize) of a chain
// are kept together, under the hash of the page's first block.
const PageSize = 32

// PageKey returns the page key of the block at position i of chain: the
// hash of its page's first block.
func PageKey(chain []BlockHash, i int) BlockHash { return chain[i-i%PageSize] }
