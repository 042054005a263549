package ingestbench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/loadtest/engine"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// PodStream is one pod's part of the workload: its batches, encoded.
type PodStream struct {
	// ID is the pod id (the pod part of its topic).
	ID string
	// Payloads are the pod's EventBatch payloads in publish order; batch
	// i gets sequence number i.
	Payloads [][]byte
	// Blocks[i] is the number of engine block events (stored plus removed
	// blocks) of batch i.
	Blocks []int32
	// TotalBlocks is the sum of Blocks.
	TotalBlocks int64
	// FinalBlocks is the number of blocks the pod's engine caches at the end.
	FinalBlocks int
}

// Workload is the encoded event stream of every pod and its counts.
type Workload struct {
	// Pods are the pods' streams, in pod order.
	Pods []PodStream
	// Requests is the number of trace requests replayed.
	Requests int
	// Batches, StoredEvents and RemovedEvents count the messages and the
	// events in them; StoredBlocks and RemovedBlocks the engine blocks.
	Batches, StoredEvents, RemovedEvents int64
	StoredBlocks, RemovedBlocks          int64
	// PayloadBytes is the size of every payload together.
	PayloadBytes int64
}

// BlockEvents returns the engine block events of the whole workload.
func (w *Workload) BlockEvents() int64 { return w.StoredBlocks + w.RemovedBlocks }

// PodID returns the id of pod i.
func PodID(i int) string { return fmt.Sprintf("10.1.%d.%d:8000", i/250, i%250+1) }

// BuildWorkload splits recs across the pods at random, runs each pod's
// requests through its engine model in arrival order and encodes the
// resulting batches (see the package doc). Pods are built in parallel.
func BuildWorkload(recs []trace.Record, cfg Config) (*Workload, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("ingestbench: no requests")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	perPod := make([][]int, cfg.Pods)
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5eed))
	for i := range recs {
		p := rng.IntN(cfg.Pods)
		perPod[p] = append(perPod[p], i)
	}
	w := &Workload{Pods: make([]PodStream, cfg.Pods), Requests: len(recs)}
	builders := make([]*podBuilder, cfg.Pods)
	errs := make([]error, cfg.Pods)
	var wg sync.WaitGroup
	next := make(chan int, cfg.Pods)
	for p := range cfg.Pods {
		next <- p
	}
	close(next)
	for range min(runtime.GOMAXPROCS(0), cfg.Pods) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				b := newPodBuilder(cfg, PodID(p))
				errs[p] = b.run(recs, perPod[p])
				builders[p] = b
			}
		}()
	}
	wg.Wait()
	for p, b := range builders {
		if errs[p] != nil {
			return nil, errs[p]
		}
		w.Pods[p] = b.out
		w.Batches += int64(len(b.out.Payloads))
		w.StoredEvents += b.storedEvents
		w.RemovedEvents += b.removedEvents
		w.StoredBlocks += b.storedBlocks
		w.RemovedBlocks += b.removedBlocks
		w.PayloadBytes += b.payloadBytes
	}
	return w, nil
}

// pendingEvent is an event of the batch being built, its slices kept as
// offsets into the builder's arenas until the batch is encoded.
type pendingEvent struct {
	kind             events.Kind
	hashOff, hashLen int
	tokOff, tokLen   int
	parent           uint64
	hasParent        bool
}

// podBuilder turns one pod's requests into encoded batches.
type podBuilder struct {
	cfg    Config
	hasher blockhash.Hasher
	seed   blockhash.Hash
	cache  *engine.Cache
	out    PodStream

	// The batch being built.
	pending []pendingEvent
	hashes  []uint64
	toks    []uint32
	blocks  int32

	// Reused buffers.
	reqToks []uint32
	chain   []blockhash.Hash
	removed []blockhash.Hash
	batch   events.Batch
	scratch []byte
	arena   []byte

	storedEvents, removedEvents int64
	storedBlocks, removedBlocks int64
	payloadBytes                int64
}

// newPodBuilder returns the builder of pod id.
func newPodBuilder(cfg Config, id string) *podBuilder {
	h, _ := blockhash.NewHasher(cfg.EngineBlockSize) // validated by the caller
	return &podBuilder{
		cfg:    cfg,
		hasher: h,
		// The engine's own hashes differ from the router's, as vLLM's do.
		seed:  blockhash.Seed(blockhash.Keys{Model: "engine/" + cfg.Model}),
		cache: engine.NewCache(cfg.BlocksPerPod),
		out:   PodStream{ID: id},
	}
}

// run serves the pod's requests (indexes into recs) as a backlogged engine
// with chunked prefill: each step stores at most StepTokens new tokens.
func (b *podBuilder) run(recs []trace.Record, reqs []int) error {
	bs := b.cfg.EngineBlockSize
	budget := b.cfg.StepTokens / bs
	left := budget
	for _, ri := range reqs {
		r := &recs[ri]
		b.reqToks = b.reqToks[:0]
		for _, id := range r.HashIDs {
			b.reqToks = trace.AppendTokens(b.reqToks, id)
		}
		// Only the prompt's full blocks are cached.
		n := min(len(b.reqToks), r.InputLength) / bs * bs
		b.reqToks = b.reqToks[:n]
		b.chain = b.hasher.Chain(b.seed, b.reqToks, b.chain[:0])
		pos := 0
		for pos < len(b.chain) {
			pos = max(pos, b.cache.Lookup(b.chain))
			if pos >= len(b.chain) {
				break
			}
			end := min(len(b.chain), pos+left)
			ad := b.cache.Admit(r.Timestamp, b.chain[:end], b.removed)
			b.removed = ad.Removed
			if ad.Matched != pos {
				return fmt.Errorf("ingestbench: pod %s: engine model matched %d blocks, want %d", b.out.ID, ad.Matched, pos)
			}
			b.addRemoved(ad.Removed)
			b.addStored(pos, ad.Stored)
			left -= end - pos
			if left == 0 {
				if err := b.flush(); err != nil {
					return err
				}
				left = budget
			}
			if len(ad.Stored) < end-pos {
				break // the cache cannot hold more of this request
			}
			pos = end
		}
	}
	if err := b.flush(); err != nil {
		return err
	}
	b.out.FinalBlocks = b.cache.Len()
	return nil
}

// addRemoved adds the BlockRemoved events of evicted blocks: one per block,
// or one for all of them with RemovalsPerChunk.
func (b *podBuilder) addRemoved(removed []blockhash.Hash) {
	if len(removed) == 0 {
		return
	}
	off := len(b.hashes)
	for _, h := range removed {
		b.hashes = append(b.hashes, uint64(h))
	}
	if b.cfg.RemovalsPerChunk {
		b.pending = append(b.pending, pendingEvent{kind: events.KindBlockRemoved, hashOff: off, hashLen: len(removed)})
		b.removedEvents++
	} else {
		for i := range removed {
			b.pending = append(b.pending, pendingEvent{kind: events.KindBlockRemoved, hashOff: off + i, hashLen: 1})
		}
		b.removedEvents += int64(len(removed))
	}
	b.removedBlocks += int64(len(removed))
	b.blocks += int32(len(removed))
}

// addStored adds the BlockStored event of the blocks stored from chain
// position pos on.
func (b *podBuilder) addStored(pos int, stored []blockhash.Hash) {
	if len(stored) == 0 {
		return
	}
	bs := b.cfg.EngineBlockSize
	ev := pendingEvent{kind: events.KindBlockStored, hashOff: len(b.hashes), hashLen: len(stored), tokOff: len(b.toks), tokLen: len(stored) * bs}
	if pos > 0 {
		ev.parent, ev.hasParent = uint64(b.chain[pos-1]), true
	}
	for _, h := range stored {
		b.hashes = append(b.hashes, uint64(h))
	}
	b.toks = append(b.toks, b.reqToks[pos*bs:(pos+len(stored))*bs]...)
	b.pending = append(b.pending, ev)
	b.storedEvents++
	b.storedBlocks += int64(len(stored))
	b.blocks += int32(len(stored))
}

// flush encodes the batch being built, if it has events, and starts a new one.
func (b *podBuilder) flush() error {
	if len(b.pending) == 0 {
		return nil
	}
	evs := b.batch.Events[:0]
	for _, p := range b.pending {
		ev := events.Event{Kind: p.kind, BlockHashes: b.hashes[p.hashOff : p.hashOff+p.hashLen], Medium: "GPU"}
		if p.kind == events.KindBlockStored {
			ev.TokenIDs = b.toks[p.tokOff : p.tokOff+p.tokLen]
			ev.BlockSize = b.cfg.EngineBlockSize
			ev.ParentHash, ev.HasParent = p.parent, p.hasParent
		}
		evs = append(evs, ev)
	}
	b.batch = events.Batch{DPRank: -1, TS: float64(time.Now().UnixNano()) / 1e9, Events: evs}
	payload, err := vllmwire.EncodePayload(b.scratch[:0], &b.batch, b.cfg.Form)
	if err != nil {
		return fmt.Errorf("ingestbench: pod %s: encode batch %d: %w", b.out.ID, len(b.out.Payloads), err)
	}
	b.scratch = payload
	b.out.Payloads = append(b.out.Payloads, b.keep(payload))
	b.out.Blocks = append(b.out.Blocks, b.blocks)
	b.out.TotalBlocks += int64(b.blocks)
	b.payloadBytes += int64(len(payload))
	b.pending, b.hashes, b.toks, b.blocks = b.pending[:0], b.hashes[:0], b.toks[:0], 0
	return nil
}

// arenaChunk is the size of the chunks payloads are copied into, so that
// thousands of payloads make a few allocations.
const arenaChunk = 8 << 20

// keep copies p into the payload arena and returns the copy.
func (b *podBuilder) keep(p []byte) []byte {
	if len(p) > arenaChunk/4 {
		return append([]byte(nil), p...)
	}
	if cap(b.arena)-len(b.arena) < len(p) {
		b.arena = make([]byte, 0, arenaChunk)
	}
	off := len(b.arena)
	b.arena = append(b.arena, p...)
	return b.arena[off:len(b.arena):len(b.arena)]
}
