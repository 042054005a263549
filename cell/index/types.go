package index

import (
	"github.com/cellrouter/cellrouter/cell/blockhash"
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
