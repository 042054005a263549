package global

import (
	"slices"

	"github.com/zeebo/xxh3"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// Candidate is a cell the summaries suggest for a request.
type Candidate struct {
	// Cell indexes the views the search was given.
	Cell int
	// Estimated is the prefix depth the summary suggests, in blocks.
	Estimated int
}

// SearchConfig tunes the candidate search.
type SearchConfig struct {
	// MaxProbes is the most cells probed per request.
	MaxProbes int
	// Slack is how many blocks a summary's estimate may fall short of the
	// cell's true depth (sampling by Stride under-reports by up to
	// Stride-1; evictions of a parent before its child by more): a cell's
	// cost bound counts that many more cached blocks than its estimate.
	Slack int
	// ColdBlocks is how many leading blocks name a cold prompt for the
	// stable hash (two choices).
	ColdBlocks int
	// PrefillWeight is the cost of one block a cell lacks against one
	// active block of load, as in the choice (the Router uses
	// ChooseConfig.BlockWeight: the prefill and the move).
	PrefillWeight float64
	// ProbeCold probes a cold prompt's cells (see ProbesCold): the
	// MaxProbes cells a stable hash of its first blocks ranks highest,
	// and the choice takes the cheapest, on the pods' exact loads, so a
	// burst of cold prompts spreads instead of piling on the cell the
	// gossiped load showed lightest, and a follow-up that arrives before
	// the summaries show its first turn finds it. Without it a cold
	// prompt goes unprobed to the less loaded of two hashed cells.
	ProbeCold bool
	// PressureWeight adds the cache pressure to each cell's bound: the
	// blocks a cell lacks times its fullness (see cellFullness) at this
	// weight, as the cells' kv-cost and the choice weigh a pick's expected
	// evictions. The Router sets it to ChooseConfig.PressureWeight. 0
	// leaves it out.
	PressureWeight float64
	// FullAt is the estimated fullness (see cellFullness) at which a cell
	// counts as full: the pressure weighs min(1, fullness/FullAt). The
	// summary counts a block once however many of the cell's pods hold
	// it, so a cell whose pods are all full estimates below 1, by how much
	// depends on what its pods share; without FullAt those differences,
	// which say nothing of where a pick would evict, decided between full
	// cells before their load did (see doc.go, "Full cells"). 0 means 1.
	FullAt float64
}

// DefaultSearchConfig probes at most two cells, cold prompts included.
func DefaultSearchConfig() SearchConfig {
	return SearchConfig{MaxProbes: 2, Slack: 8, ColdBlocks: 4, PrefillWeight: 1, ProbeCold: true, FullAt: DefaultFullAt}
}

// DefaultFullAt is SearchConfig.FullAt's default: a cell whose summary
// fills nine tenths of its pods' blocks counts as full.
const DefaultFullAt = 0.9

// ProbesCold reports whether cold prompts are probed: ProbeCold and at
// least two probes (one probe could not choose).
func (c SearchConfig) ProbesCold() bool { return c.ProbeCold && c.MaxProbes >= 2 }

// Search finds the cells to probe for chain (see SearchDepths), estimating
// every usable cell's depth from its summary one by one. At hundreds of
// cells, SearchDepths with the depths of a gossip.Bank does the same in
// time that grows with the cells that hold the prefix, not with all cells.
func Search(cfg SearchConfig, views []CellView, chain []blockhash.Hash, coldKey uint64) (cands []Candidate, cold bool) {
	var buf [16]gossip.CellDepth
	return SearchDepths(cfg, views, nil, summaryDepths(views, chain, buf[:0]), chain, coldKey)
}

// summaryDepths appends to dst every usable cell whose summary estimates a
// prefix depth of chain above zero, asking the summaries one by one.
func summaryDepths(views []CellView, chain []blockhash.Hash, dst []gossip.CellDepth) []gossip.CellDepth {
	if len(chain) == 0 {
		return dst
	}
	for i := range views {
		v := &views[i]
		if !v.usable() || v.Summary == nil {
			continue
		}
		if d := v.Summary.Depth(chain); d > 0 {
			dst = append(dst, gossip.CellDepth{Cell: i, Depth: d})
		}
	}
	return dst
}

// searchBound is the search's lower bound on the cost of the best pod
// cell v could offer a request of total blocks whose prefix its summary
// estimates at est blocks (see SearchDepths).
func searchBound(cfg *SearchConfig, v *CellView, est, total int) float64 {
	cached := 0
	if est > 0 {
		cached = min(total, est+cfg.Slack)
	}
	b := cfg.PrefillWeight*float64(total-cached) + float64(v.Load.LeastPodBlocks)
	if cfg.PressureWeight > 0 {
		b += cfg.PressureWeight * float64(total-cached) * cellFullness(v, cfg.FullAt)
	}
	return b
}

// cellFullness estimates how full cell v's caches are, in [0, 1]: the
// blocks its summary says it holds (the sampled hashes its builder kept
// times the stride) over its pods' KV blocks (gossiped free plus active
// blocks), over fullAt (SearchConfig.FullAt; 0 means 1), at most 1; 0
// when either is unknown. It is the cell's mean, not its emptiest pod's,
// so with it the search's bound is an estimate rather than a lower bound:
// a full cell's deeper prefix no longer keeps an emptier cell out of the
// probes for a new prefix, which is what the cells' pressure would choose.
func cellFullness(v *CellView, fullAt float64) float64 {
	capacity := v.Load.FreeBlocks + v.Load.ActiveBlocks
	s, ok := v.Summary.(sizedSummary)
	if !ok || capacity <= 0 {
		return 0
	}
	if fullAt <= 0 {
		fullAt = 1
	}
	held := float64(s.Elements()) * float64(max(1, s.Params().Stride))
	return min(1, held/float64(capacity)/fullAt)
}

// sizedSummary is a summary that says how many hashes it was built from
// (*gossip.Summary is one).
type sizedSummary interface {
	Elements() uint64
	Params() gossip.Params
}

// LoadOrder returns the usable cells of views, least loaded pod first
// (ties to the less loaded cell, then the lower index): the order in which
// SearchDepths considers cells without an estimate. Compute it once per
// change of the views, not per decision.
func LoadOrder(views []CellView) []int {
	var out []int
	for i := range views {
		if views[i].usable() {
			out = append(out, i)
		}
	}
	slices.SortFunc(out, func(a, b int) int {
		va, vb := &views[a], &views[b]
		switch {
		case va.Load.LeastPodBlocks != vb.Load.LeastPodBlocks:
			return va.Load.LeastPodBlocks - vb.Load.LeastPodBlocks
		case loadOf(va) < loadOf(vb):
			return -1
		case loadOf(va) > loadOf(vb):
			return 1
		}
		return a - b
	})
	return out
}

// SearchDepths chooses the cells to probe for chain, given every cell whose
// summary estimates a prefix depth above zero (depths; cells index views;
// unusable cells are skipped). It is pure.
//
// Each usable cell gets a lower bound on the cost of the best pod it could
// offer: PrefillWeight * (blocks left to prefill if it held Slack blocks
// more than its estimate) + the active blocks of its least loaded pod
// (CellLoad.LeastPodBlocks). That is the cells' own cost, prefill plus the
// pick's load, with each part at its most optimistic, so no pod of the cell
// can cost less (while the gossiped load is current). The MaxProbes cells
// with the lowest bounds are the candidates, lowest first (ties to the
// deeper estimate, then the less loaded cell). A cell without an estimate
// can only enter through its load, so of those only the least loaded need
// be looked at.
//
// When no summary knows even the first block, cold is true and the
// candidates are the cells a stable hash of the first blocks ranks
// highest (rendezvous hashing: MaxProbes of them when ProbesCold, else
// two), the less loaded first, so repeated cold prompts, and a
// conversation's turns before the summaries show the first, meet their
// cache among the same cells.
//
// order, when not nil, is LoadOrder(views): with it the cells without an
// estimate are walked least loaded first and the walk stops after
// MaxProbes of them, instead of looking at every cell.
func SearchDepths(cfg SearchConfig, views []CellView, order []int, depths []gossip.CellDepth, chain []blockhash.Hash, coldKey uint64) (cands []Candidate, cold bool) {
	total := len(chain)
	k := max(1, cfg.MaxProbes)
	type scored struct {
		c     Candidate
		bound float64
		load  float64
	}
	var topArr [8]scored
	top := topArr[:0]
	before := func(a, b *scored) bool {
		if a.bound != b.bound {
			return a.bound < b.bound
		}
		if a.c.Estimated != b.c.Estimated {
			return a.c.Estimated > b.c.Estimated
		}
		if a.load != b.load {
			return a.load < b.load
		}
		return a.c.Cell < b.c.Cell
	}
	offer := func(x scored) {
		if len(top) == k && !before(&x, &top[k-1]) {
			return
		}
		if len(top) < k {
			top = append(top, x)
		} else {
			top[k-1] = x
		}
		for j := len(top) - 1; j > 0 && before(&top[j], &top[j-1]); j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	bound := func(v *CellView, est int) float64 { return searchBound(&cfg, v, est, total) }
	taken := make([]uint64, (len(views)+63)/64)
	known := 0
	for _, d := range depths {
		if d.Cell < 0 || d.Cell >= len(views) || d.Depth <= 0 || !views[d.Cell].usable() {
			continue
		}
		taken[d.Cell/64] |= 1 << (d.Cell % 64)
		known++
		v := &views[d.Cell]
		offer(scored{c: Candidate{Cell: d.Cell, Estimated: d.Depth}, bound: bound(v, d.Depth), load: loadOf(v)})
	}
	if known == 0 {
		if len(chain) > 0 {
			coldKey = uint64(chain[min(cfg.ColdBlocks, len(chain))-1])
		}
		n := 2
		if cfg.ProbesCold() {
			n = cfg.MaxProbes
		}
		return rendezvous(views, coldKey, n), true
	}
	// The cells without an estimate, by their least loaded pod: a shared
	// prefix (a system prompt) would otherwise draw all traffic to the
	// cells that served it first, and the choice could never weigh their
	// load against a little prefill elsewhere.
	if order != nil {
		offered := 0
		for _, i := range order {
			if offered == k {
				break
			}
			if i < 0 || i >= len(views) || !views[i].usable() || taken[i/64]&(1<<(i%64)) != 0 {
				continue
			}
			v := &views[i]
			offer(scored{c: Candidate{Cell: i}, bound: bound(v, 0), load: loadOf(v)})
			offered++
		}
	} else {
		for i := range views {
			v := &views[i]
			if !v.usable() || taken[i/64]&(1<<(i%64)) != 0 {
				continue
			}
			offer(scored{c: Candidate{Cell: i}, bound: bound(v, 0), load: loadOf(v)})
		}
	}
	cands = make([]Candidate, len(top))
	for i := range top {
		cands[i] = top[i].c
	}
	return cands, false
}

// loadOf orders cells by load: active blocks, then requests.
func loadOf(v *CellView) float64 {
	return float64(v.Load.ActiveBlocks) + float64(v.Load.ActiveRequests)/1024
}

// rendezvous returns the n usable cells (fewer if there are fewer) with
// the highest rendezvous weight for key, the less loaded first (ties in
// weight order).
func rendezvous(views []CellView, key uint64, n int) []Candidate {
	type weighted struct {
		cell int
		w    blockhash.Hash
	}
	var buf [8]weighted
	top := buf[:0]
	for i := range views {
		if !views[i].usable() {
			continue
		}
		x := weighted{i, blockhash.Mix(blockhash.Hash(key), xxh3.HashString(views[i].ID))}
		if len(top) == n && x.w <= top[n-1].w {
			continue
		}
		if len(top) < n {
			top = append(top, x)
		} else {
			top[n-1] = x
		}
		for j := len(top) - 1; j > 0 && top[j].w > top[j-1].w; j-- {
			top[j], top[j-1] = top[j-1], top[j]
		}
	}
	out := make([]Candidate, len(top))
	for i, x := range top {
		out[i] = Candidate{Cell: x.cell}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		la, lb := loadOf(&views[a.Cell]), loadOf(&views[b.Cell])
		switch {
		case la < lb:
			return -1
		case la > lb:
			return 1
		}
		return 0
	})
	return out
}
