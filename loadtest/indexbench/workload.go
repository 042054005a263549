package indexbench

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/loadtest/engine"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Model is the model name the benchmark's chains are seeded with.
const Model = "mooncake-trace"

// stream is the events of the pods one applier owns, in timeline order, laid
// out for the timed loop: event k is ops[end[k-1]:end[k]], due at trace time
// at[k] (ns from the trace's start), from request req[k].
type stream struct {
	ops []index.Op
	end []int32
	at  []int64
	req []int32
}

// start returns the offset of event k's first op.
func (s *stream) start(k int) int {
	if k == 0 {
		return 0
	}
	return int(s.end[k-1])
}

// Workload is everything the timed replay needs, built ahead of time.
type Workload struct {
	// Workers is the number of pods.
	Workers int
	// Chains[i] is request i's chain of block hashes (its query).
	Chains [][]blockhash.Hash
	// At[i] is request i's arrival, in ns from the trace's first request.
	At []int64
	// Worker[i] is the worker request i was sent to.
	Worker []int32
	// Hit[i] is the engine model's prefix hit for request i in blocks: the
	// depth the index must report for Worker[i] when the query runs.
	Hit []int32
	// Final holds, per worker, the blocks cached at the end (parents first),
	// and FinalPlaces where each sits in its chain (index.Op Pos and Page).
	Final       [][]blockhash.Hash
	FinalPlaces [][]engine.Place
	// Counts of the whole timeline.
	StoredEvents, RemovedEvents        int64
	StoredBlocks, RemovedBlocks        int64
	QueryBlocks, DistinctFinal, Finals int64

	streams []stream
}

// BlockOps returns the block-ops of the whole timeline.
func (w *Workload) BlockOps() int64 { return w.StoredBlocks + w.RemovedBlocks + w.QueryBlocks }

// Span returns the trace time from the first to the last request, in ns.
func (w *Workload) Span() int64 {
	if len(w.At) == 0 {
		return 0
	}
	return w.At[len(w.At)-1]
}

// BuildWorkload hashes the records' prompts, splits them across workers and
// replays them through the engine model, producing the timeline. Records
// must be in timestamp order.
func BuildWorkload(recs []trace.Record, cfg Config) (*Workload, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("indexbench: no requests")
	}
	hasher, err := blockhash.NewHasher(cfg.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("indexbench: %w", err)
	}
	w := &Workload{
		Workers: cfg.Workers,
		Chains:  make([][]blockhash.Hash, len(recs)),
		At:      make([]int64, len(recs)),
		Worker:  make([]int32, len(recs)),
		Hit:     make([]int32, len(recs)),
	}
	w.hashChains(recs, hasher)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	t0 := recs[0].Timestamp
	for i, r := range recs {
		if r.Timestamp < t0 {
			return nil, fmt.Errorf("indexbench: request %d: timestamp %d before the first request's %d", i, r.Timestamp, t0)
		}
		w.At[i] = (r.Timestamp - t0) * 1e6
		w.Worker[i] = int32(rng.IntN(cfg.Workers))
		w.QueryBlocks += int64(len(w.Chains[i]))
	}
	w.replay(cfg)
	return w, nil
}

// hashChains computes every request's chain. A hash id always stands for
// the same 512 tokens, so an id's blocks depend only on the id and the hash
// of the block before it; they are computed once per (parent, id) pair and
// copied after that.
func (w *Workload) hashChains(recs []trace.Record, h blockhash.Hasher) {
	perID := trace.TokensPerID / h.BlockSize
	var total int
	for _, r := range recs {
		total += len(r.HashIDs) * perID
	}
	arena := make([]blockhash.Hash, 0, total)
	type key struct {
		parent blockhash.Hash
		id     uint64
	}
	seen := make(map[key]int, total/perID/2)
	seed := blockhash.Seed(blockhash.Keys{Model: Model})
	tokens := make([]uint32, 0, trace.TokensPerID)
	for i, r := range recs {
		start := len(arena)
		parent := seed
		for _, id := range r.HashIDs {
			k := key{parent, id}
			if off, ok := seen[k]; ok {
				arena = append(arena, arena[off:off+perID]...)
			} else {
				seen[k] = len(arena)
				tokens = trace.AppendTokens(tokens[:0], id)
				arena = h.Extend(parent, tokens, arena)
			}
			parent = arena[len(arena)-1]
		}
		w.Chains[i] = arena[start:len(arena):len(arena)]
	}
}

// replay runs every request through its worker's engine model, in trace
// order, and lays the resulting events out per applier.
func (w *Workload) replay(cfg Config) {
	na := cfg.appliers()
	w.streams = make([]stream, na)
	caches := make([]*engine.Cache, cfg.Workers)
	for i := range caches {
		caches[i] = engine.NewCache(cfg.BlocksPerWorker)
		caches[i].SetPageSize(index.PageSize) // every op carries its place
	}
	var removed []blockhash.Hash
	for i, chain := range w.Chains {
		wk := int(w.Worker[i])
		ad := caches[wk].Admit(w.At[i], chain, removed)
		removed = ad.Removed
		w.Hit[i] = int32(ad.Matched)
		s := &w.streams[wk%na]
		if len(ad.Removed) > 0 {
			s.addRemoved(wk, ad.Removed, ad.RemovedPlaces, w.At[i], i)
			w.RemovedEvents++
			w.RemovedBlocks += int64(len(ad.Removed))
		}
		if len(ad.Stored) > 0 {
			s.addStored(wk, chain, ad.Matched, len(ad.Stored), w.At[i], i)
			w.StoredEvents++
			w.StoredBlocks += int64(len(ad.Stored))
		}
	}
	w.Final = make([][]blockhash.Hash, cfg.Workers)
	w.FinalPlaces = make([][]engine.Place, cfg.Workers)
	var all []blockhash.Hash
	for i, c := range caches {
		w.Final[i] = c.AppendContents(nil)
		w.FinalPlaces[i] = make([]engine.Place, len(w.Final[i]))
		for j, h := range w.Final[i] {
			w.FinalPlaces[i][j], _ = c.PlaceOf(h, index.PageSize)
		}
		all = append(all, w.Final[i]...)
		caches[i] = nil
	}
	w.Finals = int64(len(all))
	slices.Sort(all)
	w.DistinctFinal = int64(len(slices.Compact(all)))
}

// addStored appends the event of pod wk that stores chain[from:from+n].
func (s *stream) addStored(wk int, chain []blockhash.Hash, from, n int, at int64, req int) {
	for i := from; i < from+n; i++ {
		op := index.Op{Kind: index.OpStore, Slot: index.Slot(wk), Tier: index.TierGPU, Hash: chain[i]}
		op.SetPlace(chain, i)
		s.ops = append(s.ops, op)
	}
	s.close(at, req)
}

// addRemoved appends the event of pod wk that removes hashes, placed.
func (s *stream) addRemoved(wk int, hashes []blockhash.Hash, places []engine.Place, at int64, req int) {
	for i, h := range hashes {
		s.ops = append(s.ops, index.Op{Kind: index.OpRemove, Slot: index.Slot(wk), Tier: index.TierGPU, Hash: h,
			Pos: places[i].Pos, Page: places[i].Page})
	}
	s.close(at, req)
}

// close ends the event whose ops were just appended.
func (s *stream) close(at int64, req int) {
	s.end = append(s.end, int32(len(s.ops)))
	s.at = append(s.at, at)
	s.req = append(s.req, int32(req))
}

// FinalOps returns the final state as store ops, pod by pod, parents first.
func (w *Workload) FinalOps() []index.Op {
	ops := make([]index.Op, 0, w.Finals)
	for wk, hs := range w.Final {
		for i, h := range hs {
			p := w.FinalPlaces[wk][i]
			ops = append(ops, index.Op{Kind: index.OpStore, Slot: index.Slot(wk), Tier: index.TierGPU, Hash: h, Pos: p.Pos, Page: p.Page})
		}
	}
	return ops
}
