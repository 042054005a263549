package eventgen

import (
	"fmt"
	"math/rand/v2"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/loadtest/engine"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Config says how to turn a trace into events.
type Config struct {
	// Pods is the number of engine pods requests are spread over.
	Pods int
	// BlockSize is the engines' block size in tokens; it must divide 512.
	BlockSize int
	// BlocksPerPod is each engine's KV cache size in blocks.
	BlocksPerPod int
	// Model is the model name of every batch (and of the hash seed).
	Model string
	// Seed drives the random assignment of requests to pods.
	Seed uint64
}

// DefaultConfig returns 8 pods of 4096 blocks of 16 tokens.
func DefaultConfig() Config {
	return Config{Pods: 8, BlockSize: 16, BlocksPerPod: 4096, Model: "mooncake", Seed: 42}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Pods < 1 || c.Pods > 256:
		return fmt.Errorf("eventgen: Pods = %d, want 1..256", c.Pods)
	case c.BlockSize < 1 || trace.TokensPerID%c.BlockSize != 0:
		return fmt.Errorf("eventgen: BlockSize = %d, want a divisor of %d", c.BlockSize, trace.TokensPerID)
	case c.BlocksPerPod < 1:
		return fmt.Errorf("eventgen: BlocksPerPod = %d, want >= 1", c.BlocksPerPod)
	}
	return nil
}

// PodName is the id of pod i.
func PodName(i int) string { return fmt.Sprintf("pod-%03d", i) }

// Generate returns the batches the pods publish for recs, in trace order
// (each with Pod, Model, Seq, TS and its events set). Batches of one pod
// are in sequence order.
func Generate(cfg Config, recs []trace.Record) ([]events.Batch, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	hasher, err := blockhash.NewHasher(cfg.BlockSize)
	if err != nil {
		return nil, err
	}
	seed := blockhash.Seed(blockhash.Keys{Model: cfg.Model})
	caches := make([]*engine.Cache, cfg.Pods)
	seqs := make([]uint64, cfg.Pods)
	for i := range caches {
		caches[i] = engine.NewCache(cfg.BlocksPerPod)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0))
	var out []events.Batch
	var tokens []uint32
	var chain, removed []blockhash.Hash
	for _, rec := range recs {
		pod := rng.IntN(cfg.Pods)
		tokens = tokens[:0]
		for _, id := range rec.HashIDs {
			tokens = trace.AppendTokens(tokens, id)
		}
		tokens = tokens[:min(len(tokens), rec.InputLength)]
		chain = hasher.Chain(seed, tokens, chain[:0])
		adm := caches[pod].Admit(rec.Timestamp, chain, removed)
		removed = adm.Removed
		b := events.Batch{Pod: PodName(pod), Model: cfg.Model, DPRank: -1, Seq: seqs[pod], TS: float64(rec.Timestamp) / 1000}
		if len(adm.Removed) > 0 {
			b.Events = append(b.Events, events.Event{Kind: events.KindBlockRemoved, BlockHashes: toU64(adm.Removed), Medium: "GPU"})
		}
		if len(adm.Stored) > 0 {
			ev := events.Event{
				Kind:        events.KindBlockStored,
				BlockHashes: toU64(adm.Stored),
				TokenIDs:    append([]uint32(nil), tokens[adm.Matched*cfg.BlockSize:(adm.Matched+len(adm.Stored))*cfg.BlockSize]...),
				BlockSize:   cfg.BlockSize,
				Medium:      "GPU",
			}
			if adm.Matched > 0 {
				ev.ParentHash, ev.HasParent = uint64(chain[adm.Matched-1]), true
			}
			b.Events = append(b.Events, ev)
		}
		if len(b.Events) == 0 {
			continue // a full hit: the engine publishes nothing
		}
		seqs[pod]++
		out = append(out, b)
	}
	return out, nil
}

func toU64(hs []blockhash.Hash) []uint64 {
	out := make([]uint64, len(hs))
	for i, h := range hs {
		out[i] = uint64(h)
	}
	return out
}
