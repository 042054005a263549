package hierarchy

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
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
// decides); each request runs on the cell's least loaded pod (the cell's
// picker spreading its load), holding it for its output's decode time.
// The global tier is the real one: summaries built, published and encoded
// with package gossip every SummaryInterval, gossip.Bank over all of them,
// global.SearchDepths, exact probe answers (the cell's depth and its least
// loaded pod's load) and global.Choose with the move cost (MoveWeight),
// cold prompts probed on their hashed cells (ProbeCold), the load the
// global tier routed counted until the next gossip
// (global.CellLoad.Routed): the search and the choice global.Router makes
// (tierConfig, shared with the quality run). The flat reference is an
// exact oracle in the same fleet state: the cell of least cost (the cells'
// cost, 1*(blocks to prefill) + the least loaded pod's active blocks; no
// move cost, as the flat router has none) over every cell, with exact depths
// and current loads (a map from each first block to the cells holding it,
// then each holder's cache).
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
	// merged stream is steady from the start; 0 means one per
	// DefaultCellsPerTenant cells (at least one).
	Tenants int `json:"tenants"`
	// Seconds is how much trace time of the merged stream is replayed;
	// Requests, if above 0, stops the replay earlier. The first
	// WarmupSeconds fill the caches and are left out of every figure
	// (requests, reuse, probes, decisions, gossip).
	Seconds       float64 `json:"seconds"`
	WarmupSeconds float64 `json:"warmup_seconds"`
	Requests      int     `json:"requests"`
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
	// ProbeCold probes a cold prompt's hashed cells and takes the cheapest
	// (global.SearchConfig.ProbeCold); false hands it unprobed to the less
	// loaded of two.
	ProbeCold bool `json:"probe_cold"`
	// MoveWeight is the choice's cost of copying a prefix another probed
	// cell holds, per block (global.ChooseConfig.MoveWeight).
	MoveWeight float64 `json:"move_weight"`
	// DecodeMsPerToken is the load model (as Config's): a request holds
	// its pod for output_length * DecodeMsPerToken of trace time.
	DecodeMsPerToken float64 `json:"decode_ms_per_token"`
	// DeepTokens is where deep reuse starts: the report gives the share of
	// the matched tokens beyond the first DeepTokens of a chain (past the
	// trace's shared system prompt, one hash id of 512 tokens).
	DeepTokens int `json:"deep_tokens"`
	// LinearEvery times the linear search (global.Search, one summary test
	// per cell) on every n-th request, for comparison; 0 never.
	LinearEvery int `json:"linear_every"`
	// Progress, if not nil, receives progress lines.
	Progress func(format string, args ...any) `json:"-"`

	// checkOracle, set by tests, checks every request's oracle against a
	// scan of every cell's cache (scaleStats.oracleChecks, oracleWrong).
	checkOracle bool
}

// DefaultCellsPerTenant is how many cells share one tenant's copy of the
// trace by default (ScaleConfig.Tenants 0).
const DefaultCellsPerTenant = 4

// DefaultScaleConfig returns 1,024 cells of 32 pods of 512 blocks of 512
// tokens (each pod caches 262,144 tokens, the quality run's 16,384 blocks
// of 16; a cell holds 16,384 hash ids, about five minutes of one tenant's
// new prompts), one tenant per 4 cells (256), 1,800 s of the merged stream
// of which the first 1,200 fill the caches (about 520,000 requests
// measured at 1,024 cells), 100 ms a token (about one running request per
// pod: each tenant spreads over several cells, so the search must tell
// which of them holds a conversation), summaries every 2 s at stride 1
// (one sampled hash per 512 tokens, as stride 32 at 16 tokens; ProbeSlack
// 1 covers it) and the cells' default 1% false positives (5% lost 1.7%
// of the oracle's reuse at 64 cells and 3.1% at 256), and two probes. See the package
// documentation's "Fleet scale" for why 512-token blocks stand for
// 16-token ones here.
func DefaultScaleConfig() ScaleConfig {
	return ScaleConfig{
		TracePath: DefaultTrace, Cells: 1024, PodsPerCell: 32, BlocksPerPod: 512,
		Seconds: 1800, WarmupSeconds: 1200, Seed: 42, BlockSize: trace.TokensPerID,
		SummaryInterval: 2, Stride: 1, FalsePositiveRate: gossip.DefaultSummaryConfig().FalsePositiveRate, MaxProbes: 2, ProbeSlack: 1,
		ProbeCold: global.DefaultSearchConfig().ProbeCold, MoveWeight: global.DefaultMoveWeight,
		DecodeMsPerToken: 100, DeepTokens: 2 * trace.TokensPerID, LinearEvery: 64,
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
	case !(c.Seconds > 0) || !(c.WarmupSeconds >= 0 && c.WarmupSeconds < c.Seconds) || c.Requests < 0:
		return fmt.Errorf("hierarchy: scale: Seconds must be > 0, WarmupSeconds in [0, Seconds) and Requests >= 0, got %v, %v and %d",
			c.Seconds, c.WarmupSeconds, c.Requests)
	case c.BlockSize < blockhash.MinBlockSize || c.BlockSize > blockhash.MaxBlockSize || trace.TokensPerID%c.BlockSize != 0:
		return fmt.Errorf("hierarchy: scale: BlockSize must divide %d, got %d", trace.TokensPerID, c.BlockSize)
	case !(c.SummaryInterval > 0):
		return fmt.Errorf("hierarchy: scale: SummaryInterval must be > 0 s, got %v", c.SummaryInterval)
	case c.MaxProbes < 1 || c.ProbeSlack < 0:
		return fmt.Errorf("hierarchy: scale: MaxProbes must be >= 1 and ProbeSlack >= 0, got %d and %d", c.MaxProbes, c.ProbeSlack)
	case !(c.MoveWeight >= 0):
		return fmt.Errorf("hierarchy: scale: MoveWeight must be >= 0, got %v", c.MoveWeight)
	case !(c.DecodeMsPerToken >= 0) || c.LinearEvery < 0 || c.DeepTokens < 0:
		return fmt.Errorf("hierarchy: scale: DecodeMsPerToken, LinearEvery and DeepTokens must be >= 0, got %v, %d and %d",
			c.DecodeMsPerToken, c.LinearEvery, c.DeepTokens)
	}
	if err := c.summaryConfig().Validate(); err != nil {
		return fmt.Errorf("hierarchy: scale: %w", err)
	}
	return nil
}

// tenants is the number of tenants the run replays.
func (c ScaleConfig) tenants() int {
	if c.Tenants > 0 {
		return c.Tenants
	}
	return max(1, c.Cells/DefaultCellsPerTenant)
}

// tier is the run's global tier: the cells' default prefill weight (the
// oracle's), the cold key over the global tier's default leading blocks.
// It weighs no cache pressure: its cells are one cache each, whose probe
// answers report no evictions.
func (c ScaleConfig) tier() tierConfig {
	return tierConfig{MaxProbes: c.MaxProbes, Slack: c.ProbeSlack, ColdBlocks: global.DefaultSearchConfig().ColdBlocks,
		ProbeCold: c.ProbeCold, Prefill: oraclePrefillWeight, Move: c.MoveWeight, FullAt: global.DefaultFullAt}
}

func (c ScaleConfig) summaryConfig() gossip.SummaryConfig {
	s := gossip.DefaultSummaryConfig()
	s.Stride, s.FalsePositiveRate = c.Stride, c.FalsePositiveRate
	// A cell holds PodsPerCell*BlocksPerPod blocks, of which about one in
	// Stride is sampled (and the first of every chain): size the filter
	// for a full cell, not for the default.
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
	pods    []int // each pod's running requests' blocks
	least   int   // index of the least loaded pod (the lower on ties)
	running int   // running requests
	active  int   // running requests' blocks
	removed []blockhash.Hash
}

// leastPod returns the cell's least loaded pod and its active blocks (the
// lower index on ties).
func (c *scaleCell) leastPod() (pod, blocks int) { return c.least, c.pods[c.least] }

// addLoad changes pod's active blocks by blocks and finds the least loaded
// pod again.
func (c *scaleCell) addLoad(pod, blocks int) {
	c.pods[pod] += blocks
	c.active += blocks
	if blocks > 0 {
		c.running++
	} else {
		c.running--
	}
	c.least = 0
	for i, b := range c.pods {
		if b < c.pods[c.least] {
			c.least = i
		}
	}
}

// load is what the cell gossips: its totals and its least loaded pods, as
// celld's does.
func (c *scaleCell) load() global.CellLoad {
	l := gossip.Load{ActiveRequests: c.running, ActiveBlocks: c.active, Pods: len(c.pods),
		FreeBlocks: max(0, c.cache.Capacity()-c.active)}
	l.SetLightest(c.pods)
	return global.CellLoad(l)
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

// scaleRelease ends one request's load on a cell's pod.
type scaleRelease struct {
	end    int64
	cell   int
	pod    int
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
	tenants := cfg.tenants()
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
		cells[i] = &scaleCell{cache: engine.NewCache(cfg.PodsPerCell * cfg.BlocksPerPod), held: newHeldSet(), sum: sm,
			pods: make([]int, cfg.PodsPerCell)}
		views[i] = global.CellView{ID: id, HTTPAddr: id + ":8000", GRPCAddr: id + ":8001", Alive: true, Load: cells[i].load()}
	}
	bank := gossip.NewBank()
	search, choose := cfg.tier().configs()
	// holders maps a depth-1 block to the cells holding it: the oracle's
	// way in (a cell holding any prefix of a chain holds its first block).
	holders := map[blockhash.Hash][]int32{}
	var releases releaseHeap
	order := newLoadOrder(views) // global.LoadOrder, kept current

	// The warm-up's counters are dropped; st becomes the measured ones at
	// WarmupSeconds.
	st := newScaleStats(cfg)
	warmMs := int64(cfg.WarmupSeconds * 1000)
	measuring := warmMs == 0
	var toks []uint32
	var chain []blockhash.Hash
	var depths []gossip.CellDepth
	answers := make([]global.ProbeAnswer, 0, cfg.MaxProbes)
	nextGen := int64(0)
	intervalMs := int64(cfg.SummaryInterval * 1000)
	endMs := int64(cfg.Seconds * 1000)
	deepBlocks := cfg.DeepTokens / cfg.BlockSize
	var now int64
	release := func(at int64) {
		for releases.Len() > 0 && releases[0].end <= at {
			r := heap.Pop(&releases).(scaleRelease)
			cells[r.cell].addLoad(r.pod, -r.blocks)
		}
	}
	publish := func(at int64) error {
		release(at)
		for i, c := range cells {
			l := c.load()
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
		order.reset(views)
		st.generations++
		return nil
	}
	nextProgress := endMs / 10
	for n := 0; cfg.Requests == 0 || n < cfg.Requests; n++ {
		cur := cursors[0]
		if cur.at >= endMs {
			break
		}
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if cur.at >= nextProgress {
				cfg.progress("%d requests, %.0f s of trace, reuse %.4f of the oracle's", n, float64(cur.at)/1e3, ratio(st.matched, st.oracle))
				nextProgress += endMs / 10
			}
		}
		t, k := cur.tenant, cur.next
		now = cur.at
		if !measuring && now >= warmMs {
			measuring = true
			st = newScaleStats(cfg)
			st.start = now
			for _, c := range cells {
				st.gossipBase += c.sum.wireBytes
			}
			cfg.progress("warm-up over after %d requests: %.3f of the fleet's cache filled", n, cacheFill(cells))
		}
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
		release(now)
		toks = toks[:0]
		for _, id := range rec.HashIDs {
			toks = trace.AppendTokens(toks, id)
		}
		chain = h.Chain(seeds[t], toks, chain[:0])
		if len(chain) == 0 {
			continue
		}
		total := len(chain)
		blocks := total + (rec.OutputLength+cfg.BlockSize-1)/cfg.BlockSize

		// The global decision, timed without the probes' round trip.
		t0 := time.Now()
		depths = bank.Depths(chain, depths[:0])
		cands, cold := global.SearchDepths(search, views, order.cells, depths, chain, 0)
		st.decisions = append(st.decisions, time.Since(t0))
		if cfg.LinearEvery > 0 && n%cfg.LinearEvery == 0 {
			t1 := time.Now()
			global.Search(search, views, chain, 0)
			st.linear = append(st.linear, time.Since(t1))
		}
		cell := cands[0].Cell
		probes := 0
		if cold && !search.ProbesCold() {
			// Unprobed, to the less loaded of two hashed cells: the global
			// tier counts the load it hands the cell, not knowing the pod.
			views[cell].Load.Routed(blocks, -1)
			order.moved(views, cell)
		} else {
			answers = answers[:0]
			for _, c := range cands {
				d := exactDepth(cells[c.Cell].cache, chain)
				if c.Estimated > 0 && d < c.Estimated {
					st.falseProbes++
				}
				_, least := cells[c.Cell].leastPod()
				answers = append(answers, global.ProbeAnswer{Cell: c.Cell, Matched: d, Load: float64(least), CellBlocks: views[c.Cell].Load.ActiveBlocks})
				probes++
			}
			cell = global.Choose(choose, answers, total)[0]
			// The cell took the request on its probe answer (its least
			// loaded pod's load): count its load until the cell gossips
			// again, as global.Router does.
			_, pick := cells[cell].leastPod()
			views[cell].Load.Routed(blocks, pick)
			order.moved(views, cell)
		}
		if cold {
			st.colds++
		}
		st.probeHist[probes]++
		st.probes += int64(probes)

		// The oracles in the same fleet state: the flat exact router's
		// choice, and the deepest prefix any cell holds.
		or := flatOracle(cells, holders[chain[0]], chain, oraclePrefillWeight)
		if cfg.checkOracle {
			st.oracleChecks++
			if want := naiveOracle(cells, chain, oraclePrefillWeight); want.depth != or.depth || want.deepest != or.deepest || want.cost != or.cost {
				st.oracleWrong++
			}
		}

		sc := cells[cell]
		ad := sc.cache.Admit(now*int64(time.Millisecond), chain, sc.removed)
		sc.removed = ad.Removed
		st.evicted += int64(len(ad.Removed))
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
		pod, _ := sc.leastPod()
		sc.addLoad(pod, blocks)
		heap.Push(&releases, scaleRelease{end: now + int64(float64(rec.OutputLength)*cfg.DecodeMsPerToken), cell: cell, pod: pod, blocks: blocks})
		st.served[cell]++
		st.blocks += int64(total)
		st.matched += int64(ad.Matched)
		st.oracle += int64(or.depth)
		st.deepest += int64(or.deepest)
		st.matchedDeep += int64(max(0, ad.Matched-deepBlocks))
		st.oracleDeep += int64(max(0, or.depth-deepBlocks))
		st.deepestDeep += int64(max(0, or.deepest-deepBlocks))
		if ad.Matched < or.depth {
			st.below(or, cands, cold, depths, cells, chain)
		}
		st.requests++
	}
	rep := st.report(cfg, cells, views, bank, float64(now-st.start)/1e3, tenants)
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

// cacheFill is the share of the fleet's cache holding blocks.
func cacheFill(cells []*scaleCell) float64 {
	var held, capacity int64
	for _, c := range cells {
		held += int64(c.cache.Len())
		capacity += int64(c.cache.Capacity())
	}
	return ratio(held, capacity)
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

// oraclePrefillWeight is the flat oracle's weight of one block to prefill
// against one active block: the cells' default profile's.
const oraclePrefillWeight = 1

// oracleChoice is what the exact references make of one request: the
// depth the flat router's cell holds (depth), its cost, and the deepest
// prefix any cell holds (deepest).
type oracleChoice struct {
	cell           int // -1 for a cell holding no prefix
	depth, deepest int
	cost           float64
}

// flatOracle is the flat exact router: of every cell, the one of least
// cost, prefillWeight*(blocks to prefill) + its least loaded pod's active
// blocks, with exact depths and current loads; ties to the deeper prefix.
// Only the holders of chain's first block (cs) can hold any of it; every
// other cell costs the whole chain plus its least loaded pod, so of those
// the least loaded of all cells stands for them (if it is a holder, its
// true cost is lower still, so it changes nothing).
func flatOracle(cells []*scaleCell, cs []int32, chain []blockhash.Hash, prefillWeight float64) oracleChoice {
	total := len(chain)
	least := -1
	for _, c := range cells {
		if _, l := c.leastPod(); least < 0 || l < least {
			least = l
		}
	}
	best := oracleChoice{cell: -1, cost: prefillWeight*float64(total) + float64(least)}
	for _, c := range cs {
		d := exactDepth(cells[c].cache, chain)
		_, l := cells[c].leastPod()
		cost := prefillWeight*float64(total-d) + float64(l)
		if cost < best.cost || cost == best.cost && d > best.depth {
			best.cell, best.depth, best.cost = int(c), d, cost
		}
		best.deepest = max(best.deepest, d)
	}
	return best
}

// naiveOracle is flatOracle's reference: every cell's cache walked block by
// block (engine.Cache.Lookup), no holders map.
func naiveOracle(cells []*scaleCell, chain []blockhash.Hash, prefillWeight float64) oracleChoice {
	var best oracleChoice
	for i, c := range cells {
		d := c.cache.Lookup(chain)
		_, l := c.leastPod()
		cost := prefillWeight*float64(len(chain)-d) + float64(l)
		if i == 0 || cost < best.cost || cost == best.cost && d > best.depth {
			best.depth, best.cost = d, cost
		}
		best.deepest = max(best.deepest, d)
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
