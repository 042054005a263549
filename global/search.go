package global

import (
	"github.com/zeebo/xxh3"

	"github.com/cellrouter/cellrouter/cell/blockhash"
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
	// Slack keeps, besides the best estimate, cells whose estimate is at
	// least the best minus Slack blocks (Bloom sampling and false positives
	// make estimates coarse), up to MaxProbes.
	Slack int
	// ColdBlocks is how many leading blocks name a cold prompt for the
	// stable hash (two choices).
	ColdBlocks int
}

// DefaultSearchConfig probes at most two cells.
func DefaultSearchConfig() SearchConfig {
	return SearchConfig{MaxProbes: 2, Slack: 8, ColdBlocks: 4}
}

// Search finds the cells to probe for chain: the usable cells whose summary
// suggests the deepest prefix, best first (ties to the less loaded). When no
// summary knows even the first block, cold is true and the candidates are
// the two cells a stable hash of the first blocks chooses (rendezvous
// hashing), the less loaded first, so repeated cold prompts meet their cache
// in the same cell. Search is pure and allocates only its result.
func Search(cfg SearchConfig, views []CellView, chain []blockhash.Hash, coldKey uint64) (cands []Candidate, cold bool) {
	best := 0
	for i := range views {
		v := &views[i]
		if !v.usable() || v.Summary == nil || len(chain) == 0 {
			continue
		}
		if d := v.Summary.Depth(chain); d > 0 {
			cands = append(cands, Candidate{Cell: i, Estimated: d})
			best = max(best, d)
		}
	}
	if len(cands) > 0 {
		// Insertion sort: candidates are few, and sort.Slice allocates.
		before := func(a, b Candidate) bool {
			if a.Estimated != b.Estimated {
				return a.Estimated > b.Estimated
			}
			return loadOf(&views[a.Cell]) < loadOf(&views[b.Cell])
		}
		for i := 1; i < len(cands); i++ {
			for j := i; j > 0 && before(cands[j], cands[j-1]); j-- {
				cands[j], cands[j-1] = cands[j-1], cands[j]
			}
		}
		// Keep the deepest estimates within Slack, leaving one probe for
		// the least loaded cell: a prefix every cell shares (a system
		// prompt) would otherwise draw all traffic to the cells that
		// happened to serve it first, and the choice could never weigh
		// their load against a little prefill elsewhere.
		room := cfg.MaxProbes
		if room > 1 {
			room--
		}
		keep := 0
		for _, c := range cands {
			if keep == room || c.Estimated < best-cfg.Slack {
				break
			}
			cands[keep] = c
			keep++
		}
		cands = cands[:keep]
		if keep < cfg.MaxProbes {
			if i := leastLoaded(views, cands); i >= 0 {
				est := 0
				if views[i].Summary != nil {
					est = views[i].Summary.Depth(chain)
				}
				cands = append(cands, Candidate{Cell: i, Estimated: est})
			}
		}
		return cands, false
	}
	if len(chain) > 0 {
		coldKey = uint64(chain[min(cfg.ColdBlocks, len(chain))-1])
	}
	return twoChoices(views, coldKey), true
}

// leastLoaded returns the usable cell with the least load that is not in
// cands, or -1.
func leastLoaded(views []CellView, cands []Candidate) int {
	best := -1
	for i := range views {
		if !views[i].usable() {
			continue
		}
		taken := false
		for _, c := range cands {
			taken = taken || c.Cell == i
		}
		if !taken && (best < 0 || loadOf(&views[i]) < loadOf(&views[best])) {
			best = i
		}
	}
	return best
}

// loadOf orders cells by load: active blocks, then requests.
func loadOf(v *CellView) float64 {
	return float64(v.Load.ActiveBlocks) + float64(v.Load.ActiveRequests)/1024
}

// twoChoices returns the two usable cells with the highest rendezvous
// weight for key, the less loaded first.
func twoChoices(views []CellView, key uint64) []Candidate {
	first, second := -1, -1
	var w1, w2 blockhash.Hash
	for i := range views {
		if !views[i].usable() {
			continue
		}
		w := blockhash.Mix(blockhash.Hash(key), xxh3.HashString(views[i].ID))
		switch {
		case first < 0 || w > w1:
			second, w2 = first, w1
			first, w1 = i, w
		case second < 0 || w > w2:
			second, w2 = i, w
		}
	}
	var out []Candidate
	if first >= 0 {
		out = append(out, Candidate{Cell: first})
	}
	if second >= 0 {
		out = append(out, Candidate{Cell: second})
		if loadOf(&views[second]) < loadOf(&views[first]) {
			out[0], out[1] = out[1], out[0]
		}
	}
	return out
}
