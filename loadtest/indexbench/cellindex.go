package indexbench

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
)

// cellIndexer adapts *index.Index to Indexer.
type cellIndexer struct {
	ix *index.Index
}

var (
	_ Indexer   = (*cellIndexer)(nil)
	_ accounter = (*cellIndexer)(nil)
)

// newCellIndexer builds an index with the default configuration, its
// tables sized for expected blocks, and registers pods "worker-000".. as
// slots 0..pods-1.
func newCellIndexer(pods, expected int) (Indexer, error) {
	return buildCellIndexer(pods, expected, false, index.LayoutBlock)
}

// newPagedIndexer is newCellIndexer with the paged layout.
func newPagedIndexer(pods, expected int) (Indexer, error) {
	return buildCellIndexer(pods, expected, false, index.LayoutPaged)
}

// newPagedIndexerWithLearner is newCellIndexerWithLearner with the paged
// layout.
func newPagedIndexerWithLearner(pods, expected int) (Indexer, error) {
	return buildCellIndexer(pods, expected, true, index.LayoutPaged)
}

// newCellIndexerWithLearner is newCellIndexer with an index.Learner
// attached, as celld runs it: every Apply takes its slots' learner locks
// and every Match tests the approximate pods. The learner learns nothing
// here (no routing): it measures the cost of the attachment for a fleet
// without approximate pods.
func newCellIndexerWithLearner(pods, expected int) (Indexer, error) {
	return buildCellIndexer(pods, expected, true, index.LayoutBlock)
}

func buildCellIndexer(pods, expected int, learner bool, layout index.Layout) (Indexer, error) {
	cfg := index.DefaultConfig()
	cfg.Layout = layout
	cfg.ExpectedBlocks = min(expected, cfg.MaxBlocks)
	ix, err := index.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("indexbench: %w", err)
	}
	for i := 0; i < pods; i++ {
		s, err := ix.Register(fmt.Sprintf("worker-%03d", i))
		if err != nil {
			ix.Close()
			return nil, fmt.Errorf("indexbench: register worker %d: %w", i, err)
		}
		if int(s) != i {
			ix.Close()
			return nil, fmt.Errorf("indexbench: index gave worker %d slot %d, want %d", i, s, i)
		}
	}
	if learner {
		if _, err := index.NewLearner(ix, index.DefaultLearnConfig()); err != nil {
			ix.Close()
			return nil, fmt.Errorf("indexbench: %w", err)
		}
	}
	return &cellIndexer{ix: ix}, nil
}

func (c *cellIndexer) Apply(ops []index.Op) { c.ix.Apply(ops) }

func (c *cellIndexer) NewMatcher() Matcher { return &cellMatcher{ix: c.ix} }

func (c *cellIndexer) Blocks() int64 { return c.ix.Stats().Blocks }

func (c *cellIndexer) AccountedBytes() int64 { return c.ix.Stats().TableBytes }

func (c *cellIndexer) Close() { c.ix.Close() }

// cellMatcher owns one reusable MatchResult.
type cellMatcher struct {
	ix  *index.Index
	res index.MatchResult
}

func (m *cellMatcher) Match(chain []blockhash.Hash) { m.ix.Match(chain, &m.res) }

func (m *cellMatcher) Depth(s index.Slot) int { return m.res.Depth(s) }

// Lookups returns the lookups (block layout) or page reads (paged layout)
// of the last Match.
func (m *cellMatcher) Lookups() int { return m.res.Lookups() }

// Rounds returns the dependent rounds of those reads.
func (m *cellMatcher) Rounds() int { return m.res.Rounds() }
