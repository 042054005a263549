package indexbench

import (
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// Indexer is the write and read surface the benchmark drives. All methods
// may be called concurrently with each other, except Close.
type Indexer interface {
	// Apply applies ops in order for every hash. It does not retain ops.
	Apply(ops []index.Op)
	// NewMatcher returns a Matcher for the use of one goroutine.
	NewMatcher() Matcher
	// Blocks returns the number of distinct block hashes held.
	Blocks() int64
	// Close releases the indexer's goroutines, if any.
	Close()
}

// Matcher answers queries for one goroutine, reusing its result storage.
type Matcher interface {
	// Match computes every live pod's matched prefix depth for chain. It
	// does not retain chain.
	Match(chain []blockhash.Hash)
	// Depth returns pod s's depth in the last Match.
	Depth(s index.Slot) int
}

// accounter is implemented by indexers that account their own table memory.
type accounter interface {
	AccountedBytes() int64
}

// Factory builds an empty indexer with pods 0..pods-1 registered and alive
// as slots 0..pods-1, sized for about expected distinct blocks (0: no hint).
type Factory struct {
	// Name identifies the indexer in reports.
	Name string
	// New builds the indexer.
	New func(pods, expected int) (Indexer, error)
	// Sampled: Verify checks a sample of its queries rather than all (a
	// slow indexer).
	Sampled bool
}

// CellIndex is the Factory of the real cell/index.Index.
var CellIndex = Factory{Name: "cell/index", New: newCellIndexer}

// CellIndexWithLearner is CellIndex with an idle index.Learner attached.
var CellIndexWithLearner = Factory{Name: "cell/index+learner", New: newCellIndexerWithLearner}

// PagedIndex is CellIndex with the paged layout (index.LayoutPaged).
var PagedIndex = Factory{Name: "cell/index[paged]", New: newPagedIndexer}

// PagedIndexWithLearner is PagedIndex with an idle index.Learner attached.
var PagedIndexWithLearner = Factory{Name: "cell/index[paged]+learner", New: newPagedIndexerWithLearner}

// NaiveIndex is the Factory of the naive baseline.
var NaiveIndex = Factory{Name: "naive", New: func(pods, expected int) (Indexer, error) { return NewNaive(pods, expected), nil }, Sampled: true}
