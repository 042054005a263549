package ingestbench

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// DefaultTrace is the trace committed with the repository, relative to the
// module root.
const DefaultTrace = "loadtest/traces/conversation_trace.jsonl"

// Config describes one benchmark run.
type Config struct {
	// TracePath is the Mooncake trace whose requests make the workload.
	TracePath string
	// MaxRequests limits the workload to the trace's first requests; 0
	// takes all of them.
	MaxRequests int
	// Seed drives the random split of requests across pods.
	Seed uint64
	// Pods is the number of engine pods, each with its own publisher.
	Pods int
	// Model is the served model named in every topic.
	Model string
	// EngineBlockSize is the engines' KV block size in tokens; it must
	// divide 512 (the tokens of one trace hash id).
	EngineBlockSize int
	// RouterBlockSize is the cell's block size (events.Config.BlockSize).
	RouterBlockSize int
	// BlocksPerPod is each engine's KV cache budget in blocks.
	BlocksPerPod int
	// StepTokens is the engine's token budget per step (vLLM's
	// max_num_batched_tokens): the most new prompt tokens one batch stores.
	StepTokens int
	// RemovalsPerChunk groups a request chunk's evictions into one
	// BlockRemoved event; false sends one event per evicted block, as vLLM's
	// block pool does.
	RemovalsPerChunk bool
	// Form is the payload layout (vllmwire.FormArray or FormMap).
	Form vllmwire.Form
	// Rate, when positive, runs only one paced run at this offered rate of
	// block events per second, instead of a saturation run and a paced run.
	Rate float64
	// PacedFraction is the offered rate of the paced run after the
	// saturation run, as a fraction of the rate measured there; 0 skips it.
	PacedFraction float64
	// Verify compares each run's index with a reference index the same
	// payloads were applied to directly.
	Verify bool
	// Timeout bounds the wait for the last batch of one run.
	Timeout time.Duration
	// Progress, if not nil, receives one line per phase.
	Progress func(format string, args ...any) `json:"-"`
}

// DefaultConfig returns the full benchmark: the whole committed trace over
// 32 pods of 16,384 blocks of 16 tokens, 8,192-token steps, array form,
// a saturation run then a run paced at half its rate, both verified.
func DefaultConfig() Config {
	return Config{
		TracePath:       DefaultTrace,
		Seed:            42,
		Pods:            32,
		Model:           "mooncake-trace",
		EngineBlockSize: 16,
		RouterBlockSize: blockhash.DefaultBlockSize,
		BlocksPerPod:    16384,
		StepTokens:      8192,
		Form:            vllmwire.FormArray,
		PacedFraction:   0.5,
		Verify:          true,
		Timeout:         5 * time.Minute,
	}
}

// QuickConfig is DefaultConfig cut down to well under a minute on two
// cores: the trace's first 4,000 requests.
func QuickConfig() Config {
	c := DefaultConfig()
	c.MaxRequests = 4000
	c.Timeout = time.Minute
	return c
}

// Validate returns an error naming the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.TracePath == "":
		return fmt.Errorf("ingestbench: Config.TracePath is empty")
	case c.MaxRequests < 0:
		return fmt.Errorf("ingestbench: Config.MaxRequests %d must be >= 0", c.MaxRequests)
	case c.Pods < 1 || c.Pods > index.MaxPods:
		return fmt.Errorf("ingestbench: Config.Pods %d out of range [1, %d]", c.Pods, index.MaxPods)
	case c.EngineBlockSize < 1 || trace.TokensPerID%c.EngineBlockSize != 0:
		return fmt.Errorf("ingestbench: Config.EngineBlockSize %d must divide %d", c.EngineBlockSize, trace.TokensPerID)
	case c.RouterBlockSize < blockhash.MinBlockSize || c.RouterBlockSize > blockhash.MaxBlockSize:
		return fmt.Errorf("ingestbench: Config.RouterBlockSize %d out of range [%d, %d]", c.RouterBlockSize, blockhash.MinBlockSize, blockhash.MaxBlockSize)
	case c.BlocksPerPod < 1:
		return fmt.Errorf("ingestbench: Config.BlocksPerPod %d must be >= 1", c.BlocksPerPod)
	case c.StepTokens < c.EngineBlockSize:
		return fmt.Errorf("ingestbench: Config.StepTokens %d must be at least EngineBlockSize %d", c.StepTokens, c.EngineBlockSize)
	case c.Form&^vllmwire.FormMap != 0:
		return fmt.Errorf("ingestbench: Config.Form %#x must be FormArray or FormMap", uint8(c.Form))
	case !(c.Rate >= 0):
		return fmt.Errorf("ingestbench: Config.Rate %v must be >= 0", c.Rate)
	case !(c.PacedFraction >= 0 && c.PacedFraction <= 1):
		return fmt.Errorf("ingestbench: Config.PacedFraction %v out of range [0, 1]", c.PacedFraction)
	case c.Timeout <= 0:
		return fmt.Errorf("ingestbench: Config.Timeout %v must be positive", c.Timeout)
	}
	return nil
}

// progress reports one line if a Progress function is set.
func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(format, args...)
	}
}
