package index

import (
	"errors"
	"fmt"
)

// Config tunes an Index. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// MaxBlocks caps the number of distinct block hashes the index holds.
	// When the cap is reached, stores that would add a new block are refused
	// (and counted in Stats.CapDrops); stores that add a holder to a known
	// block, and all removals, still apply. Refusing new blocks only makes
	// the index under-report matches, which is safe: a request then routes
	// as if that part of its prefix were not cached. Within one Apply call,
	// once a store for a pod is refused, the pod's later stores in that call
	// are refused too, so a pod's chain never gets a hole.
	MaxBlocks int
	// SweepWorkers bounds how many goroutines sweep shards in parallel after
	// pods die or are cleared. Each holds one shard lock at a time.
	SweepWorkers int
	// ExpectedBlocks sizes the tables up front for this many distinct
	// blocks (0: start small). Each shard's table then holds its share below
	// the growth load from the start and never shrinks below that size, so
	// no write pays for rehashing while the pods' caches fill. The sum of the
	// pods' KV cache sizes is the natural value: no more distinct blocks can
	// be held at once. It costs memory before the blocks arrive, about 32
	// bytes per expected block (16-byte slots, at most half full after
	// rounding to a power of two); the trace-replay benchmark measures the
	// gain (loadtest index --expected-blocks).
	ExpectedBlocks int
	// Layout chooses how blocks are stored: LayoutBlock (the default, also
	// for "") keys every block by its own hash; LayoutPaged keeps the blocks
	// of a chain's page together so that a query reads a page in one access,
	// and needs every Op to carry its place (Op.Pos, Op.Page). See the
	// package doc.
	Layout Layout
}

// Layout is the storage layout of an Index.
type Layout string

// The layouts.
const (
	LayoutBlock Layout = "block"
	LayoutPaged Layout = "paged"
)

// ParseLayout returns the layout named s ("" is LayoutBlock).
func ParseLayout(s string) (Layout, error) {
	switch Layout(s) {
	case "", LayoutBlock:
		return LayoutBlock, nil
	case LayoutPaged:
		return LayoutPaged, nil
	}
	return "", fmt.Errorf("%w: unknown layout %q (want %q or %q)", ErrInvalidConfig, s, LayoutBlock, LayoutPaged)
}

// DefaultConfig returns the configuration celld starts from: room for 32M
// blocks (about 1 GiB of tables at the measured footprint) and two sweepers.
func DefaultConfig() Config {
	return Config{
		MaxBlocks:    1 << 25,
		SweepWorkers: 2,
	}
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("index: invalid config")

// Validate reports the first field that is out of range.
func (c Config) Validate() error {
	if c.MaxBlocks < 1 {
		return fmt.Errorf("%w: MaxBlocks must be at least 1, got %d", ErrInvalidConfig, c.MaxBlocks)
	}
	if c.ExpectedBlocks < 0 || c.ExpectedBlocks > c.MaxBlocks {
		return fmt.Errorf("%w: ExpectedBlocks must be in [0, MaxBlocks = %d], got %d", ErrInvalidConfig, c.MaxBlocks, c.ExpectedBlocks)
	}
	if _, err := ParseLayout(string(c.Layout)); err != nil {
		return err
	}
	if c.SweepWorkers < 1 || c.SweepWorkers > numShards {
		return fmt.Errorf("%w: SweepWorkers must be in [1, %d], got %d", ErrInvalidConfig, numShards, c.SweepWorkers)
	}
	return nil
}
