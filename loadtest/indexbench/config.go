package indexbench

import (
	"fmt"
	"runtime"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// DefaultTrace is the trace committed with the repository, relative to the
// module root.
const DefaultTrace = "loadtest/traces/conversation_trace.jsonl"

// Config describes one benchmark run.
type Config struct {
	// TracePath is the Mooncake trace to replay.
	TracePath string
	// MaxRequests limits the replay to the first requests of the trace; 0
	// replays all of them.
	MaxRequests int
	// Workers is the number of engine workers (index pods), 1..256.
	Workers int
	// Seed drives the random split of requests across workers.
	Seed uint64
	// BlockSize is the engine's KV block size in tokens; it must divide 512.
	BlockSize int
	// BlocksPerWorker is each worker's KV cache budget in blocks.
	BlocksPerWorker int
	// ExpectedBlocks is the capacity hint both indexers get when they are
	// built: cell/index pre-sizes its tables for it (index.Config
	// ExpectedBlocks) and the naive map is made with it. 0 means the fleet's
	// capacity, Workers * BlocksPerWorker, which is how celld sizes its index
	// from its pods' kv_blocks; a negative value gives no hint (tables grow
	// from empty).
	ExpectedBlocks int
	// Window is the longest wall time one sweep step replays.
	Window time.Duration
	// Steps is the most sweep steps per indexer, not counting the pilot.
	Steps int
	// StepsPerDecade sets the sweep's log step: the rate falls by a factor
	// 10^(1/StepsPerDecade) from one step to the next.
	StepsPerDecade int
	// StartFactor times the pilot's unpaced rate is the sweep's first rate.
	StartFactor float64
	// Refine is the number of extra steps that bisect (geometrically)
	// between the first passing rate and the failing one above it, to
	// narrow the threshold down below one log step.
	Refine int
	// Appliers is the number of goroutines applying events; 0 means GOMAXPROCS.
	Appliers int
	// Queriers is the number of goroutines issuing queries.
	Queriers int
	// MaxBatchOps caps the ops an applier passes to one Apply call; events
	// are never split, so a larger event is applied alone.
	MaxBatchOps int
	// MinRatio is the achieved/offered ratio a step must reach to pass.
	MinRatio float64
	// MaxBacklog is the largest fraction of a step's block-ops that may
	// still be queued at the end of the window for the run to be valid.
	MaxBacklog float64
	// Verify runs the sequential correctness check before timing.
	Verify bool
	// Baseline also benchmarks the naive indexer.
	Baseline bool
	// Learner attaches an idle index.Learner to cell/index, as celld does
	// (see CellIndexWithLearner).
	Learner bool
	// Layout is cell/index's storage layout: "block" (the default, also
	// ""), "paged", or "both" to benchmark the two side by side in one run,
	// block first (Report.Paged then holds the paged layout's figures).
	Layout string
	// Progress, if not nil, receives one line per phase and step.
	Progress func(format string, args ...any) `json:"-"`
}

// DefaultConfig returns the published method's settings: the committed
// trace, 256 workers, seed 42, 16-token blocks, 16,384 blocks per worker.
func DefaultConfig() Config {
	return Config{
		TracePath:       DefaultTrace,
		Workers:         256,
		Seed:            42,
		BlockSize:       16,
		BlocksPerWorker: 16384,
		Window:          2 * time.Second,
		Steps:           12,
		StepsPerDecade:  8,
		StartFactor:     1.5,
		Refine:          2,
		Queriers:        1,
		MaxBatchOps:     512,
		MinRatio:        0.95,
		MaxBacklog:      0.05,
		Verify:          true,
		Baseline:        true,
	}
}

// QuickConfig is DefaultConfig cut down to run in well under a minute on two
// cores: the first 2,000 requests, half-second windows, at most 6 steps.
func QuickConfig() Config {
	c := DefaultConfig()
	c.MaxRequests = 2000
	c.Window = 500 * time.Millisecond
	c.Steps = 6
	c.StepsPerDecade = 6
	return c
}

// Validate returns an error naming the first bad field.
func (c Config) Validate() error {
	switch {
	case c.TracePath == "":
		return fmt.Errorf("indexbench: TracePath is empty")
	case c.MaxRequests < 0:
		return fmt.Errorf("indexbench: MaxRequests must be >= 0, got %d", c.MaxRequests)
	case c.Workers < 1 || c.Workers > index.MaxPods:
		return fmt.Errorf("indexbench: Workers must be in [1, %d], got %d", index.MaxPods, c.Workers)
	case c.BlockSize < 1 || trace.TokensPerID%c.BlockSize != 0:
		return fmt.Errorf("indexbench: BlockSize must divide %d, got %d", trace.TokensPerID, c.BlockSize)
	case c.BlocksPerWorker < 1:
		return fmt.Errorf("indexbench: BlocksPerWorker must be >= 1, got %d", c.BlocksPerWorker)
	case c.Window < time.Millisecond:
		return fmt.Errorf("indexbench: Window must be >= 1ms, got %v", c.Window)
	case c.Steps < 1:
		return fmt.Errorf("indexbench: Steps must be >= 1, got %d", c.Steps)
	case c.StepsPerDecade < 1:
		return fmt.Errorf("indexbench: StepsPerDecade must be >= 1, got %d", c.StepsPerDecade)
	case !(c.StartFactor > 0):
		return fmt.Errorf("indexbench: StartFactor must be > 0, got %v", c.StartFactor)
	case c.Refine < 0:
		return fmt.Errorf("indexbench: Refine must be >= 0, got %d", c.Refine)
	case c.Appliers < 0 || c.Appliers > c.Workers:
		return fmt.Errorf("indexbench: Appliers must be in [0, Workers=%d], got %d", c.Workers, c.Appliers)
	case c.Queriers < 1 || c.Queriers > 64:
		return fmt.Errorf("indexbench: Queriers must be in [1, 64], got %d", c.Queriers)
	case c.MaxBatchOps < 1:
		return fmt.Errorf("indexbench: MaxBatchOps must be >= 1, got %d", c.MaxBatchOps)
	case !(c.MinRatio > 0 && c.MinRatio <= 1):
		return fmt.Errorf("indexbench: MinRatio must be in (0, 1], got %v", c.MinRatio)
	case c.Layout != "" && c.Layout != LayoutBoth && c.Layout != string(index.LayoutBlock) && c.Layout != string(index.LayoutPaged):
		return fmt.Errorf("indexbench: Layout must be %q, %q or %q, got %q", index.LayoutBlock, index.LayoutPaged, LayoutBoth, c.Layout)
	case !(c.MaxBacklog >= 0 && c.MaxBacklog < 1):
		return fmt.Errorf("indexbench: MaxBacklog must be in [0, 1), got %v", c.MaxBacklog)
	}
	return nil
}

// LayoutBoth is the Config.Layout that benchmarks both layouts in one run.
const LayoutBoth = "both"

// cellFactories returns the cell/index factories Layout asks for, in the
// order they run.
func (c Config) cellFactories() []Factory {
	block, paged := CellIndex, PagedIndex
	if c.Learner {
		block, paged = CellIndexWithLearner, PagedIndexWithLearner
	}
	switch c.Layout {
	case string(index.LayoutPaged):
		return []Factory{paged}
	case LayoutBoth:
		return []Factory{block, paged}
	}
	return []Factory{block}
}

// expectedBlocks returns the effective capacity hint (see ExpectedBlocks).
func (c Config) expectedBlocks() int {
	switch {
	case c.ExpectedBlocks < 0:
		return 0
	case c.ExpectedBlocks == 0:
		return c.Workers * c.BlocksPerWorker
	}
	return c.ExpectedBlocks
}

// appliers returns the effective number of applier goroutines.
func (c Config) appliers() int {
	a := c.Appliers
	if a == 0 {
		a = runtime.GOMAXPROCS(0)
	}
	return min(a, c.Workers)
}

// progress reports one line if a Progress function is set.
func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(format, args...)
	}
}
