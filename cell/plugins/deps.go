package plugins

import (
	"context"
	"math"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// Tokenizer turns a request's text prompt or chat messages into the token
// ids the engine would see. It may block (a remote /tokenize call).
type Tokenizer interface {
	Tokenize(ctx context.Context, req *pipeline.Request) ([]uint32, error)
}

// Matcher is the index query the prefix-match preparer runs.
type Matcher interface {
	Match(chain []index.BlockHash, r *index.MatchResult)
}

// Splitter tells, after a Match, which part of some pods' depth is
// speculative (index.Index.SplitLearned). A Matcher that is also a
// Splitter lets kv-cost weigh speculative blocks.
type Splitter interface {
	SplitLearned(chain []index.BlockHash, r *index.MatchResult, pods index.HostBitmap)
}

// Deps are what the plug-ins need from the cell.
type Deps struct {
	// Index answers prefix matches.
	Index Matcher
	// Hasher hashes token ids at the router's block size; it must be the
	// block size the event applier indexes with.
	Hasher blockhash.Hasher
	// Tokenizer handles text prompts; nil rejects them.
	Tokenizer Tokenizer
	// Sessions remembers which pod served a session last; nil disables
	// session plug-ins' memory.
	Sessions *Sessions
	// Engines are the engines' own metrics (engine_metrics); nil gives the
	// engine plug-ins an empty view, where every pod falls back to the
	// router's estimate.
	Engines EngineSource
}

// normalize maps values to [0, 1] by min-max; all equal gives all 1.
func normalize(v []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	for i := range v {
		if hi > lo {
			v[i] = (v[i] - lo) / (hi - lo)
		} else {
			v[i] = 1
		}
	}
}

// noSlots is an empty slot list.
var noSlots []pipeline.SlotRef
