package hierarchy

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cellrouter/cellrouter/cell/blockhash"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/loadtest/engine"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// ScaleConfig describes a fleet-scale run (loadtest hierarchy --scale): the
// global tier over hundreds or thousands of cells, fed by many tenants.
//
// The model is lighter than the quality run's, so that 1,024 cells of 32
// pods fit in one process: a cell is one engine cache model of
// PodsPerCell*BlocksPerPod blocks (which of its pods holds a block is the
// cell's own business, exactly indexed, and not what the global tier
// decides), its load is its running requests' blocks spread over its pods,
// and the flat reference is an exact oracle: for every request, the
// deepest prefix any cell holds at that moment (a map from each first block
// to the cells holding it, then each holder's cache). The global tier is
// the real one: summaries built, published and encoded with package gossip
// every SummaryInterval, gossip.Bank over all of them, global.SearchDepths
// and global.Choose over exact probe answers.
type ScaleConfig struct {
	// TracePath is the trace every tenant replays.
	TracePath string `json:"trace"`
	// Cells and PodsPerCell shape the fleet; BlocksPerPod is each pod's
	// cache (a cell caches PodsPerCell*BlocksPerPod blocks).
	Cells        int `json:"cells"`
	PodsPerCell  int `json:"pods_per_cell"`
	BlocksPerPod int `json:"blocks_per_pod"`
	// Tenants copy the trace, each with its own cache salt (a prefix of
	// one tenant never matches another's) and a time offset drawn
	// uniformly over the trace's span (each copy wraps around), so the
	// merged stream is steady from the start; 0 means one per cell.
	Tenants int `json:"tenants"`
	// Requests is how many requests of the merged stream are replayed.
	Requests int `json:"requests"`
	// Seed draws the offsets.
	Seed      uint64 `json:"seed"`
	BlockSize int    `json:"block_size"`
	// SummaryInterval, Stride and FalsePositiveRate shape the summaries;
	// MaxProbes and ProbeSlack the search.
	SummaryInterval   float64 `json:"summary_interval_s"`
	Stride            int     `json:"stride"`
	FalsePositiveRate float64 `json:"fpr"`
	MaxProbes         int     `json:"max_probes"`
	ProbeSlack        int     `json:"probe_slack"`
	// DecodeMsPerToken is the load model (as Config's).
	DecodeMsPerToken float64 `json:"decode_ms_per_token"`
	// LinearEvery times the linear search (global.Search, one summary test
	// per cell) on every n-th request, for comparison; 0 never.
	LinearEvery int `json:"linear_every"`
	// Progress, if not nil, receives progress lines.
	Progress func(format string, args ...any) `json:"-"`
}

// DefaultScaleConfig returns 1,024 cells of 32 pods of 256 blocks (8,192
// blocks a cell, about ten prompts of the trace), one tenant per cell,
// 100,000 requests, summaries every 2 s at stride 32 and 5% false positives
// (what keeps the gossip into one globald under 2 MB/s at this churn; the
// probe recovers the precision, and ProbeSlack covers the stride), two
// probes, and the trace's pace.
func DefaultScaleConfig() ScaleConfig {
	return ScaleConfig{
		TracePath: DefaultTrace, Cells: 1024, PodsPerCell: 32, BlocksPerPod: 256,
		Requests: 100_000, Seed: 42, BlockSize: 16,
		SummaryInterval: 2, Stride: 32, FalsePositiveRate: 0.05, MaxProbes: 2, ProbeSlack: 32,
		DecodeMsPerToken: 20, LinearEvery: 16,
	}
}

// Validate returns an error naming the first bad field.
func (c ScaleConfig) Validate() error {
	switch {
	case c.TracePath == "":
		return fmt.Errorf("hierarchy: scale: TracePath is empty")
	case c.Cells < 1 || c.Cells > 1<<16:
		return fmt.Errorf("hierarchy: scale: Cells must be in [1, 65536], got %d", c.Cells)
	case c.PodsPerCell < 1 || c.BlocksPerPod < 1:
		return fmt.Errorf("hierarchy: scale: PodsPerCell and BlocksPerPod must be >= 1, got %d and %d", c.PodsPerCell, c.BlocksPerPod)
	case c.Tenants < 0:
		return fmt.Errorf("hierarchy: scale: Tenants must be >= 0, got %d", c.Tenants)
	case c.Requests < 1:
		return fmt.Errorf("hierarchy: scale: Requests must be >= 1, got %d", c.Requests)
	case c.BlockSize < blockhash.MinBlockSize || c.BlockSize > blockhash.MaxBlockSize || trace.TokensPerID%c.BlockSize != 0:
		return fmt.Errorf("hierarchy: scale: BlockSize must divide %d, got %d", trace.TokensPerID, c.BlockSize)
	case !(c.SummaryInterval > 0):
		return fmt.Errorf("hierarchy: scale: SummaryInterval must be > 0 s, got %v", c.SummaryInterval)
	case c.MaxProbes < 1 || c.ProbeSlack < 0:
		return fmt.Errorf("hierarchy: scale: MaxProbes must be >= 1 and ProbeSlack >= 0, got %d and %d", c.MaxProbes, c.ProbeSlack)
	case !(c.DecodeMsPerToken >= 0) || c.LinearEvery < 0:
		return fmt.Errorf("hierarchy: scale: DecodeMsPerToken and LinearEvery must be >= 0, got %v and %d", c.DecodeMsPerToken, c.LinearEvery)
	}
	if err := c.summaryConfig().Validate(); err != nil {
		return fmt.Errorf("hierarchy: scale: %w", err)
	}
	return nil
}

func (c ScaleConfig) summaryConfig() gossip.SummaryConfig {
	s := gossip.DefaultSummaryConfig()
	s.Stride, s.FalsePositiveRate = c.Stride, c.FalsePositiveRate
	// A cell holds PodsPerCell*BlocksPerPod blocks, of which about one in
	// Stride is sampled: size the filter for that, not for the default.
	s.ExpectedElements = max(1024, c.PodsPerCell*c.BlocksPerPod/c.Stride+c.PodsPerCell*c.BlocksPerPod/64)
	return s
}

func (c ScaleConfig) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(format, args...)
	}
}

// scaleCell is one cell of the scale model.
type scaleCell struct {
	cache   *engine.Cache
	held    *heldSet
	sum     *summarizer
	dirty   bool
	active  int // running requests' blocks
	removed []blockhash.Hash
}

// tenantCursor walks one tenant's copy of the trace in time order.
type tenantCursor struct {
	tenant int
	next   int   // position in the rotated trace
	at     int64 // arrival of the next request, ms
}

type cursorHeap []*tenantCursor

func (h cursorHeap) Len() int           { return len(h) }
func (h cursorHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h cursorHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)        { *h = append(*h, x.(*tenantCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// scaleRelease ends one request's load on a cell.
type scaleRelease struct {
	end    int64
	cell   int
	blocks int
}

type releaseHeap []scaleRelease

func (h releaseHeap) Len() int           { return len(h) }
func (h releaseHeap) Less(i, j int) bool { return h[i].end < h[j].end }
func (h releaseHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *releaseHeap) Push(x any)        { *h = append(*h, x.(scaleRelease)) }
func (h *releaseHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// RunScale replays the tenants' merged stream through the global tier over
// cfg.Cells cells and reports (see ScaleConfig for the model).
func RunScale(ctx context.Context, cfg ScaleConfig) (*ScaleReport, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	recs, err := trace.ReadFile(cfg.TracePath, 0)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("hierarchy: scale: %s: no requests", cfg.TracePath)
	}
	tenants := cfg.Tenants
	if tenants == 0 {
		tenants = cfg.Cells
	}
	h, err := blockhash.NewHasher(cfg.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("hierarchy: scale: %w", err)
	}
	span := recs[len(recs)-1].Timestamp - recs[0].Timestamp + 1
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x5ca1e))
	seeds := make([]blockhash.Hash, tenants)
	cursors := make(cursorHeap, 0, tenants)
	offsets := make([]int64, tenants)
	firsts := make([]int, tenants) // rotation start of each tenant's copy
	for t := range tenants {
		seeds[t] = blockhash.Seed(blockhash.Keys{Model: Model, CacheSalt: fmt.Sprintf("tenant-%05d", t)})
		offsets[t] = rng.Int64N(span)
		// The copy's order starts at the first request whose shifted time
		// wraps past the span.
		f := 0
		for f < len(recs) && recs[f].Timestamp-recs[0].Timestamp+offsets[t] < span {
			f++
		}
		firsts[t] = f % len(recs)
		cursors = append(cursors, &tenantCursor{tenant: t})
	}
	// The k-th request of tenant t's copy: the rotation puts the wrapped
	// requests first, then the rest, lap after lap.
	arrival := func(t, k int) int64 {
		i := (firsts[t] + k) % len(recs)
		return (recs[i].Timestamp-recs[0].Timestamp+offsets[t])%span + int64(k/len(recs))*span
	}
	for _, c := range cursors {
		c.at = arrival(c.tenant, 0)
	}
	heap.Init(&cursors)

	scfg := cfg.summaryConfig()
	cells := make([]*scaleCell, cfg.Cells)
	views := make([]global.CellView, cfg.Cells)
	for i := range cells {
		id := fmt.Sprintf("cell-%04d", i)
		sm, err := newSummarizer(id, scfg)
		if err != nil {
			return nil, err
		}
		cells[i] = &scaleCell{cache: engine.NewCache(cfg.PodsPerCell * cfg.BlocksPerPod), held: newHeldSet(), sum: sm}
		views[i] = global.CellView{ID: id, HTTPAddr: id + ":8000", GRPCAddr: id + ":8001", Alive: true,
			Load: global.CellLoad{Pods: cfg.PodsPerCell, FreeBlocks: cfg.PodsPerCell * cfg.BlocksPerPod}}
	}
	bank := gossip.NewBank()
	search := global.SearchConfig{MaxProbes: cfg.MaxProbes, Slack: cfg.ProbeSlack, ColdBlocks: 4, PrefillWeight: 1}
	choose := global.ChooseConfig{PrefillWeight: 1}
	// holders maps a depth-1 block to the cells holding it: the oracle's
	// way in (a cell holding any prefix of a chain holds its first block).
	holders := map[blockhash.Hash][]int32{}
	var releases releaseHeap
	var order []int // global.LoadOrder of the views, per generation

	st := newScaleStats(cfg)
	var toks []uint32
	var chain []blockhash.Hash
	var depths []gossip.CellDepth
	answers := make([]global.ProbeAnswer, 0, cfg.MaxProbes)
	nextGen := int64(0)
	intervalMs := int64(cfg.SummaryInterval * 1000)
	var now int64
	// The gossiped load is the cell's total; its least loaded pod is
	// taken as idle (see ScaleConfig: the scale run measures whether the
	// global tier finds the prefix, so the choice is by prefix alone).
	cellLoad := func(c int) global.CellLoad {
		a := cells[c].active
		return global.CellLoad{ActiveBlocks: a, Pods: cfg.PodsPerCell, FreeBlocks: max(0, cfg.PodsPerCell*cfg.BlocksPerPod-a)}
	}
	publish := func(at int64) error {
		for releases.Len() > 0 && releases[0].end <= at {
			r := heap.Pop(&releases).(scaleRelease)
			cells[r.cell].active -= r.blocks
		}
		for i, c := range cells {
			l := cellLoad(i)
			if !c.dirty && views[i].Summary != nil {
				c.sum.heartbeat(l)
				views[i].Load = l
				continue
			}
			s, err := c.sum.publish(c.held, l)
			if err != nil {
				return err
			}
			c.dirty = false
			views[i].Summary, views[i].Load, views[i].SummaryBytes = s, l, s.SizeBytes()
			bank.Set(i, s)
		}
		order = global.LoadOrder(views)
		st.generations++
		return nil
	}
	for n := 0; n < cfg.Requests; n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if n > 0 && n%(cfg.Requests/10+1) == 0 {
				cfg.progress("%d/%d requests, reuse %.4f of the oracle's", n, cfg.Requests, ratio(st.matched, st.oracle))
			}
		}
		cur := cursors[0]
		t, k := cur.tenant, cur.next
		now = cur.at
		cur.next++
		cur.at = arrival(t, cur.next)
		heap.Fix(&cursors, 0)
		rec := &recs[(firsts[t]+k)%len(recs)]
		for nextGen*intervalMs <= now {
			if err := publish(nextGen * intervalMs); err != nil {
				return nil, err
			}
			nextGen++
		}
		for releases.Len() > 0 && releases[0].end <= now {
			r := heap.Pop(&releases).(scaleRelease)
			cells[r.cell].active -= r.blocks
		}
		toks = toks[:0]
		for _, id := range rec.HashIDs {
			toks = trace.AppendTokens(toks, id)
		}
		chain = h.Chain(seeds[t], toks, chain[:0])
		if len(chain) == 0 {
			continue
		}

		// The global decision, timed without the probes' round trip.
		t0 := time.Now()
		depths = bank.Depths(chain, depths[:0])
		cands, cold := global.SearchDepths(search, views, order, depths, chain, 0)
		st.decisions = append(st.decisions, time.Since(t0))
		if cfg.LinearEvery > 0 && n%cfg.LinearEvery == 0 {
			t1 := time.Now()
			global.Search(search, views, chain, 0)
			st.linear = append(st.linear, time.Since(t1))
		}
		cell := cands[0].Cell
		probes := 0
		if !cold {
			answers = answers[:0]
			for _, c := range cands {
				d := exactDepth(cells[c.Cell].cache, chain)
				if c.Estimated > 0 && d < c.Estimated {
					st.falseProbes++
				}
				answers = append(answers, global.ProbeAnswer{Cell: c.Cell, Matched: d})
				probes++
			}
			cell = global.Choose(choose, answers, len(chain))[0]
		} else {
			st.colds++
		}
		st.probeHist[probes]++
		st.probes += int64(probes)

		// The oracle: the deepest prefix any cell holds now.
		best := maxHeld(cells, holders[chain[0]], chain)

		sc := cells[cell]
		ad := sc.cache.Admit(now*int64(time.Millisecond), chain, sc.removed)
		sc.removed = ad.Removed
		for _, b := range ad.Removed {
			if d, ok := sc.held.depth(b); ok && d == 1 {
				holders[b] = removeCell(holders[b], int32(cell))
				if len(holders[b]) == 0 {
					delete(holders, b)
				}
			}
			sc.held.remove(b)
		}
		for j, b := range ad.Stored {
			d := ad.Matched + j + 1
			sc.held.store(b, d)
			if d == 1 {
				holders[b] = append(holders[b], int32(cell))
			}
		}
		sc.dirty = sc.dirty || len(ad.Removed) > 0 || len(ad.Stored) > 0
		blocks := len(chain) + (rec.OutputLength+cfg.BlockSize-1)/cfg.BlockSize
		sc.active += blocks
		heap.Push(&releases, scaleRelease{end: now + int64(float64(rec.OutputLength)*cfg.DecodeMsPerToken), cell: cell, blocks: blocks})
		st.served[cell]++
		st.blocks += int64(len(chain))
		st.matched += int64(ad.Matched)
		st.oracle += int64(best)
		st.requests++
	}
	rep := st.report(cfg, cells, views, bank, float64(now)/1e3, tenants)
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

// exactDepth is the cell's exact answer: the cached prefix of chain,
// binary-searched (the engine cache is prefix-closed: it evicts leaves).
func exactDepth(c *engine.Cache, chain []blockhash.Hash) int {
	lo, hi := 0, len(chain) // chain[:lo] cached; chain[hi-1] not, or hi == len
	if !c.Contains(chain[0]) {
		return 0
	}
	lo = 1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if c.Contains(chain[mid-1]) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// maxHeld is the deepest prefix of chain any of the cells holds.
func maxHeld(cells []*scaleCell, cs []int32, chain []blockhash.Hash) int {
	best := 0
	for _, c := range cs {
		best = max(best, exactDepth(cells[c].cache, chain))
	}
	return best
}

func removeCell(cs []int32, c int32) []int32 {
	for i, x := range cs {
		if x == c {
			cs[i] = cs[len(cs)-1]
			return cs[:len(cs)-1]
		}
	}
	return cs
}
