package index

import (
	"sync"
	"sync/atomic"
)

// Index is a cell's exact block index: which live pods hold which block.
// All methods are safe for concurrent use.
type Index struct {
	cfg    Config
	shards [numShards]shard
	// pshards replaces shards in the paged layout (nil in the block one).
	pshards *[numShards]pshard
	alive   [4]atomic.Uint64
	blocks  atomic.Int64

	pods  registry
	tiers [MaxPods]tierMap
	// held counts each live pod's blocks (see Held).
	held  heldCounts
	sweep sweeper

	scratch sync.Pool // *applyScratch

	learn atomic.Pointer[Learner] // nil: no learned holdings (NewLearner)
}

// New returns an empty index and starts its background sweeper; Close stops it.
func New(cfg Config) (*Index, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	ix := &Index{cfg: cfg}
	if cfg.Layout == LayoutPaged {
		// The directory holds pages, not blocks: reserve for an average
		// page of pagedReserveDiv blocks.
		ix.pshards = new([numShards]pshard)
		minSize := reservedSlots(cfg.ExpectedBlocks / pagedReserveDiv)
		for i := range ix.pshards {
			ix.pshards[i].init(minSize)
		}
	} else {
		minSize := reservedSlots(cfg.ExpectedBlocks)
		for i := range ix.shards {
			ix.shards[i].init(minSize)
		}
	}
	ix.pods.init()
	ix.scratch.New = func() any { return new(applyScratch) }
	ix.sweep.start(ix)
	return ix, nil
}

// Close stops the background sweeper and waits for it. Pending sweeps are
// finished first. The index stays readable and writable, but a pod killed
// after Close is never swept.
func (ix *Index) Close() {
	ix.sweep.stop()
}

// pagedReserveDiv is the average page, in blocks, the paged layout sizes
// its directories for from Config.ExpectedBlocks: a full page, so that a
// directory of 128-byte slots costs about 8 bytes per expected block;
// shorter pages make it grow.
const pagedReserveDiv = PageSize

// Layout returns the index's storage layout.
func (ix *Index) Layout() Layout {
	if ix.pshards != nil {
		return LayoutPaged
	}
	return LayoutBlock
}

// base returns shard i's lock, counters and overflow array.
func (ix *Index) base(i int) *shardBase {
	if ix.pshards != nil {
		return &ix.pshards[i].shardBase
	}
	return &ix.shards[i].shardBase
}

// shardKey returns the key that chooses op's shard: its hash, or its page
// in the paged layout.
func (ix *Index) shardKey(op *Op) uint64 {
	if ix.pshards != nil {
		return uint64(op.Page)
	}
	return uint64(op.Hash)
}

// MaxBlocks returns Config.MaxBlocks: the most distinct blocks the index
// holds.
func (ix *Index) MaxBlocks() int { return ix.cfg.MaxBlocks }

// Blocks returns the number of distinct blocks held (one atomic load).
func (ix *Index) Blocks() int64 { return ix.blocks.Load() }

// Alive returns the set of live pod slots.
func (ix *Index) Alive() HostBitmap {
	return HostBitmap{ix.alive[0].Load(), ix.alive[1].Load(), ix.alive[2].Load(), ix.alive[3].Load()}
}

func (ix *Index) isAlive(s Slot) bool {
	return ix.alive[s>>6].Load()&(1<<(s&63)) != 0
}

func (ix *Index) setAlive(s Slot) { ix.alive[s>>6].Or(1 << (s & 63)) }

func (ix *Index) clearAlive(s Slot) { ix.alive[s>>6].And(^uint64(1 << (s & 63))) }

// Stats is a point-in-time summary of the index for metrics.
type Stats struct {
	// Blocks is the number of distinct block hashes held.
	Blocks int64
	// Shards is the number of shards.
	Shards int
	// TableBytes is the memory of the shard tables and overflow arrays.
	TableBytes int64
	// CapDrops counts stores refused because MaxBlocks was reached.
	CapDrops uint64
	// StaleOps counts ops for slots that were not alive when applied.
	StaleOps uint64
	// LivePods and SweepingPods count slots by state.
	LivePods, SweepingPods int
	// Sweeps counts finished sweep passes.
	Sweeps uint64
}

// Stats returns current figures. It takes every shard lock in turn, so call
// it from a metrics scrape, not from a hot path.
func (ix *Index) Stats() Stats {
	st := Stats{Blocks: ix.blocks.Load(), Shards: numShards}
	for i := range numShards {
		b := ix.base(i)
		b.mu.Lock()
		if ix.pshards != nil {
			st.TableBytes += ix.pshards[i].bytes()
		} else {
			st.TableBytes += ix.shards[i].bytes()
		}
		st.CapDrops += b.capDrops
		st.StaleOps += b.stale
		b.mu.Unlock()
	}
	st.LivePods, st.SweepingPods = ix.pods.counts()
	st.Sweeps = ix.sweep.passes.Load()
	return st
}
