package events

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// Role says which phase of inference a pod serves.
type Role string

// The pod roles.
const (
	RolePrefill Role = "prefill"
	RoleDecode  Role = "decode"
	RoleBoth    Role = "both"
)

// valid reports whether r is one of the known roles.
func (r Role) valid() bool {
	return r == RolePrefill || r == RoleDecode || r == RoleBoth
}

// PodSpec is a pod the cell knows from its configuration.
type PodSpec struct {
	// ID is the pod's id, as its events name it (the pod part of a ZMQ
	// topic kv@<pod>@<model>). It must be unique and non-empty.
	ID string
	// Address is where the cell sends the pod requests (host:port).
	Address string
	// Role is the phase the pod serves; "" means RoleBoth.
	Role Role
	// Model is the model the pod serves, as clients name it; "" means the
	// one its events name, else Config.DefaultModel. When set it overrides
	// the model a publisher names (a topic's), since it is what requests
	// are hashed under.
	Model string
	// MaxIndexBlocks bounds the router blocks each holder of the pod may
	// index (its share of the index; see Config.MaxIndexBlocksPerPod); 0
	// means Config.MaxIndexBlocksPerPod. The engine's own capacity is the
	// natural value: it cannot hold more at once.
	MaxIndexBlocks int
}

// Config configures the Applier and the Registry.
type Config struct {
	// BlockSize is the router's block size in tokens: the size of the blocks
	// whose chained hashes the index holds. It may differ from the engines'
	// block size; it must equal the block size the cell uses to hash
	// requests. Default blockhash.DefaultBlockSize (16).
	BlockSize int

	// DefaultModel is the model name folded into the chain seed of a batch
	// that does not name its model. Default "".
	DefaultModel string

	// Models, when non-empty, is the allow-list of served models: a batch of
	// any other model (after DefaultModel is applied) is dropped as
	// ReasonUnknownModel. Empty accepts every model.
	Models []string

	// MaxBlocksPerPod bounds the engine blocks the Applier tracks per holder
	// (about 130 bytes each, more when engine and router block sizes
	// differ). Past it, a new block evicts the holder's least recently used
	// block (see evict.go). Default 1<<20.
	MaxBlocksPerPod int

	// MaxIndexBlocksPerPod bounds the router blocks one holder may index,
	// for pods whose PodSpec sets no MaxIndexBlocks: past it, a new block
	// evicts the holder's least recently used block, so that one publisher
	// cannot fill the index for the others. Default 1<<18 (4M tokens at
	// 16-token blocks, more than a large GPU caches).
	MaxIndexBlocksPerPod int

	// DeadAfter is how long a pod may go without both events and successful
	// health checks before Registry.Tick kills it. Default 30s.
	DeadAfter time.Duration

	// Pods are the pods known from configuration; others are discovered
	// from their events unless RefuseUnknownPods. Default none.
	Pods []PodSpec

	// RefuseUnknownPods drops every batch whose publisher is neither a
	// configured pod's id nor its address (ReasonUnknownPod, ErrUnknownPod)
	// instead of discovering a pod from it: a publisher cannot make the
	// cell create pods, which would take index slots and hold blocks that
	// are never routed to. Default false (the package discovers pods); the
	// cell sets it unless events.accept_unknown_pods.
	RefuseUnknownPods bool

	// OnDrop, when not nil, is told about every batch or event the Applier
	// drops for a reason other than ordering (duplicates, gaps) or another
	// KV cache group: what an operator must hear about because blocks of a
	// pod go unindexed (an unknown model, malformed events, unmapped extra
	// keys, events without token ids, blocks whose parent the cell never
	// saw because it joined the stream mid-way). It is called on the applying goroutine,
	// with the holder locked for event drops: it must be quick and must not
	// call the Applier.
	OnDrop func(Drop)
}

// Drop describes one drop for Config.OnDrop.
type Drop struct {
	// Pod and Holder are the publisher, after mapping to a configured pod.
	Pod, Holder string
	// Reason says why.
	Reason DropReason
	// Detail is a short explanation: the error, or the first offending
	// value.
	Detail string
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		BlockSize:            blockhash.DefaultBlockSize,
		MaxBlocksPerPod:      1 << 20,
		MaxIndexBlocksPerPod: 1 << 18,
		DeadAfter:            30 * time.Second,
	}
}

// Validate returns an error naming the first invalid field and its value.
func (c Config) Validate() error {
	if c.BlockSize < blockhash.MinBlockSize || c.BlockSize > blockhash.MaxBlockSize {
		return fmt.Errorf("events: Config.BlockSize %d out of range [%d, %d]", c.BlockSize, blockhash.MinBlockSize, blockhash.MaxBlockSize)
	}
	if c.MaxBlocksPerPod < 1 || c.MaxBlocksPerPod > 1<<30 {
		return fmt.Errorf("events: Config.MaxBlocksPerPod %d out of range [1, %d]", c.MaxBlocksPerPod, 1<<30)
	}
	if c.MaxIndexBlocksPerPod < 1 || c.MaxIndexBlocksPerPod > 1<<30 {
		return fmt.Errorf("events: Config.MaxIndexBlocksPerPod %d out of range [1, %d]", c.MaxIndexBlocksPerPod, 1<<30)
	}
	if c.DeadAfter <= 0 {
		return fmt.Errorf("events: Config.DeadAfter %v must be positive", c.DeadAfter)
	}
	for i, m := range c.Models {
		if m == "" {
			return fmt.Errorf("events: Config.Models[%d] is empty", i)
		}
	}
	seen := make(map[string]bool, len(c.Pods))
	for i, p := range c.Pods {
		if p.ID == "" {
			return fmt.Errorf("events: Config.Pods[%d].ID is empty", i)
		}
		if seen[p.ID] {
			return fmt.Errorf("events: Config.Pods[%d].ID %q is a duplicate", i, p.ID)
		}
		seen[p.ID] = true
		if p.MaxIndexBlocks < 0 || p.MaxIndexBlocks > 1<<30 {
			return fmt.Errorf("events: Config.Pods[%d].MaxIndexBlocks %d out of range [0, %d]", i, p.MaxIndexBlocks, 1<<30)
		}
		if p.Role != "" && !p.Role.valid() {
			return fmt.Errorf("events: Config.Pods[%d].Role %q is not prefill, decode or both", i, p.Role)
		}
	}
	return nil
}
