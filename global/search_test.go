package global

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// searchFleet builds n cells whose summaries hold random chains of a pool
// to random depths, with random loads, and the pool.
func searchFleet(t testing.TB, r *rand.Rand, n int) ([]CellView, [][]blockhash.Hash) {
	t.Helper()
	pool := make([][]blockhash.Hash, 30)
	for i := range pool {
		pool[i] = make([]blockhash.Hash, 1+r.IntN(200))
		for j := range pool[i] {
			pool[i][j] = blockhash.Hash(r.Uint64())
		}
	}
	cfg := gossip.DefaultSummaryConfig()
	cfg.ExpectedElements, cfg.FalsePositiveRate = 512, 0.1
	views := make([]CellView, n)
	for i := range views {
		b, err := gossip.NewBuilder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for range r.IntN(6) {
			c := pool[r.IntN(len(pool))]
			b.AddChain(c[:1+r.IntN(len(c))])
		}
		s := b.Build()
		views[i] = CellView{ID: fmt.Sprintf("cell-%03d", i), HTTPAddr: "h", GRPCAddr: "g", Alive: r.IntN(10) > 0, Summary: s,
			Load: CellLoad{ActiveBlocks: r.IntN(5000), LeastPodBlocks: r.IntN(300), Pods: 8}}
	}
	return views, pool
}

// naiveSearch is the reference model of the cost-bound search: every
// usable cell's bound from its own Summary.Depth, all of them sorted, the
// first MaxProbes kept; cold when no usable cell estimates a depth.
func naiveSearch(cfg SearchConfig, views []CellView, chain []blockhash.Hash) ([]Candidate, bool) {
	type row struct {
		c     Candidate
		bound float64
		load  float64
	}
	var rows []row
	known := false
	for i := range views {
		v := &views[i]
		if !v.usable() {
			continue
		}
		est := v.Summary.Depth(chain)
		known = known || est > 0
		cached := 0
		if est > 0 {
			cached = min(len(chain), est+cfg.Slack)
		}
		rows = append(rows, row{Candidate{Cell: i, Estimated: est}, cfg.PrefillWeight*float64(len(chain)-cached) + float64(v.Load.LeastPodBlocks), loadOf(v)})
	}
	if !known {
		return nil, true
	}
	slices.SortFunc(rows, func(a, b row) int {
		switch {
		case a.bound != b.bound:
			return cmpF(a.bound, b.bound)
		case a.c.Estimated != b.c.Estimated:
			return b.c.Estimated - a.c.Estimated
		case a.load != b.load:
			return cmpF(a.load, b.load)
		}
		return a.c.Cell - b.c.Cell
	})
	var out []Candidate
	for _, r := range rows[:min(len(rows), cfg.MaxProbes)] {
		out = append(out, r.c)
	}
	return out, false
}

func cmpF(a, b float64) int {
	if a < b {
		return -1
	}
	return 1
}

// TestSearchAgainstNaiveModel checks Search (each summary tested) and
// SearchDepths over a gossip.Bank (the inverted structure) against the
// naive model on random fleets of 1 to 150 cells, random chains and
// probe budgets: the same candidates in the same order, and the same cold
// verdict.
func TestSearchAgainstNaiveModel(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	checked, warm := 0, 0
	for round := range 40 {
		n := 1 + r.IntN(150)
		views, pool := searchFleet(t, r, n)
		bank := gossip.NewBank()
		for i := range views {
			bank.Set(i, views[i].Summary.(*gossip.Summary))
		}
		for q := range 30 {
			var chain []blockhash.Hash
			if q%5 == 0 {
				chain = []blockhash.Hash{blockhash.Hash(r.Uint64()), blockhash.Hash(r.Uint64())}
			} else {
				c := pool[r.IntN(len(pool))]
				chain = c[:1+r.IntN(len(c))]
			}
			cfg := SearchConfig{MaxProbes: 1 + r.IntN(3), Slack: r.IntN(8), ColdBlocks: 4, PrefillWeight: []float64{0.5, 1, 4}[r.IntN(3)]}
			want, wantCold := naiveSearch(cfg, views, chain)
			got, cold := Search(cfg, views, chain, 0)
			if cold != wantCold || (!cold && !slices.Equal(got, want)) {
				t.Fatalf("round %d query %d: Search got %v cold %v, want %v cold %v", round, q, got, cold, want, wantCold)
			}
			for _, order := range [][]int{nil, LoadOrder(views)} {
				gotB, coldB := SearchDepths(cfg, views, order, bank.Depths(chain, nil), chain, 0)
				if coldB != cold || !slices.Equal(gotB, got) {
					t.Fatalf("round %d query %d (order %v): SearchDepths over the bank got %v cold %v, want %v cold %v",
						round, q, order != nil, gotB, coldB, got, cold)
				}
			}
			checked++
			if !cold {
				warm++
			}
		}
	}
	if warm < checked/2 {
		t.Fatalf("only %d of %d searches found a cell, want most", warm, checked)
	}
}

// TestSearchWeighsLoadAgainstPrefill: the cell with the deepest estimate
// loses its place to an idle cell when its least loaded pod carries more
// load than the prefill the prefix saves, and keeps it otherwise.
func TestSearchWeighsLoadAgainstPrefill(t *testing.T) {
	chain := make([]blockhash.Hash, 100)
	for i := range chain {
		chain[i] = blockhash.Hash(uint64(i+1) * 0x9E3779B97F4A7C15)
	}
	b, _ := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	b.AddChain(chain[:80])
	deep := b.Build()
	for _, tt := range []struct {
		name      string
		deepLeast int
		want      []int
	}{
		{"deep cell lightly loaded", 10, []int{0, 2}},
		{"deep cell's pods all busy", 500, []int{2, 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			views := []CellView{
				{ID: "deep", HTTPAddr: "h", Alive: true, Summary: deep, Load: CellLoad{LeastPodBlocks: tt.deepLeast, ActiveBlocks: 9000}},
				{ID: "busy", HTTPAddr: "h", Alive: true, Load: CellLoad{LeastPodBlocks: 300, ActiveBlocks: 100}},
				{ID: "idle", HTTPAddr: "h", Alive: true, Load: CellLoad{LeastPodBlocks: 0, ActiveBlocks: 5000}},
			}
			got, cold := Search(DefaultSearchConfig(), views, chain, 0)
			var cells []int
			for _, c := range got {
				cells = append(cells, c.Cell)
			}
			if cold || !slices.Equal(cells, tt.want) {
				t.Errorf("got cells %v cold %v, want %v warm", cells, cold, tt.want)
			}
		})
	}
}

// TestSearchFullCellsGoByLoad: cells whose summaries all share a prompt
// and whose estimated fullness differs by a few hundredths (what their
// pods share differs, not their room) are all full at the default FullAt,
// so the search probes the least loaded; with FullAt 1 those hundredths
// decided, and the search probed the most loaded cells, the trap the
// hierarchy fell into with quarter caches. A cell with room still comes
// first whatever its load.
func TestSearchFullCellsGoByLoad(t *testing.T) {
	system := make([]blockhash.Hash, 32)
	for i := range system {
		system[i] = blockhash.Hash(uint64(i+1) * 0x9E3779B97F4A7C15)
	}
	chain := append(slices.Clone(system), make([]blockhash.Hash, 40)...)
	for i := len(system); i < len(chain); i++ {
		chain[i] = blockhash.Hash(uint64(i+7) * 0xC2B2AE3D27D4EB4F)
	}
	b, _ := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	b.AddChain(system)
	for c := range 100 { // the cells' other conversations
		other := slices.Clone(system)
		for j := range 64 {
			other = append(other, blockhash.Hash(uint64(c*64+j+1)*0xD6E8FEB86659FD93))
		}
		b.AddChain(other)
	}
	sum := b.Build()
	held := float64(sum.Elements()) * float64(sum.Params().Stride)
	// cell i is full to fullness[i] by its summary, with ActiveBlocks load.
	mk := func(fullness []float64, loads []int) []CellView {
		views := make([]CellView, len(fullness))
		for i, f := range fullness {
			capacity := int(held / f)
			views[i] = CellView{ID: fmt.Sprintf("cell-%d", i), HTTPAddr: "h", GRPCAddr: "g", Alive: true, Summary: sum,
				Load: CellLoad{ActiveBlocks: loads[i], FreeBlocks: capacity - loads[i], Pods: 32}}
		}
		return views
	}
	cells := func(cands []Candidate) []int {
		var out []int
		for _, c := range cands {
			out = append(out, c.Cell)
		}
		return out
	}
	// The less full, the busier: the cells that drew traffic are the ones
	// whose pods came to share more.
	views := mk([]float64{0.96, 0.97, 0.98, 0.99}, []int{120, 90, 60, 30})
	cfg := DefaultSearchConfig()
	cfg.PressureWeight = 1
	if got, cold := Search(cfg, views, chain, 0); cold || !slices.Equal(cells(got), []int{3, 2}) {
		t.Errorf("full cells: got %v cold %v, want the two least loaded, [3 2]", cells(got), cold)
	}
	cfg.FullAt = 1
	if got, _ := Search(cfg, views, chain, 0); !slices.Equal(cells(got), []int{0, 1}) {
		t.Errorf("full cells at FullAt 1: got %v, want the two least full, [0 1]", cells(got))
	}
	cfg.FullAt = DefaultFullAt
	views = mk([]float64{0.5, 0.97, 0.98, 0.99}, []int{5000, 90, 60, 30})
	if got, _ := Search(cfg, views, chain, 0); !slices.Equal(cells(got), []int{0, 3}) {
		t.Errorf("one cell with room: got %v, want it first, then the least loaded full cell, [0 3]", cells(got))
	}
}

// TestCellFullness checks the estimate: the summary's sampled hashes times
// the stride over the gossiped blocks, over FullAt, capped at 1, and 0
// without a summary or a capacity.
func TestCellFullness(t *testing.T) {
	b, _ := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	chain := make([]blockhash.Hash, 64)
	for i := range chain {
		chain[i] = blockhash.Hash(uint64(i+1) * 0x9E3779B97F4A7C15)
	}
	b.AddChain(chain)
	sum := b.Build()
	held := float64(sum.Elements()) * float64(sum.Params().Stride)
	v := CellView{Summary: sum, Load: CellLoad{ActiveBlocks: int(held), FreeBlocks: int(held)}}
	for _, tt := range []struct{ fullAt, want float64 }{{0, 0.5}, {1, 0.5}, {0.9, 0.5 / 0.9}, {0.5, 1}, {0.25, 1}} {
		if got := cellFullness(&v, tt.fullAt); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("cellFullness(FullAt %v) = %v, want %v", tt.fullAt, got, tt.want)
		}
	}
	if got := cellFullness(&CellView{Summary: sum}, 0.9); got != 0 {
		t.Errorf("no capacity: %v, want 0", got)
	}
	if got := cellFullness(&CellView{Load: CellLoad{FreeBlocks: 10}}, 0.9); got != 0 {
		t.Errorf("no summary: %v, want 0", got)
	}
}

// TestFullAtValidated: FullAt is a fraction in (0, 1].
func TestFullAtValidated(t *testing.T) {
	for _, v := range []float64{0, -0.5, 1.01} {
		c := DefaultConfig()
		c.Search.FullAt = v
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "full_at") {
			t.Errorf("FullAt %v: Validate = %v, want a full_at error", v, err)
		}
	}
	c := DefaultConfig()
	c.Search.FullAt = 1
	if err := c.Validate(); err != nil {
		t.Errorf("FullAt 1: %v", err)
	}
}

// BenchmarkSearchCells times the global search without probes at 64, 256
// and 1,024 cells: linear (one summary test per cell, Search) against the
// inverted structure (gossip.Bank.Depths, then SearchDepths). Every cell's
// summary holds 16k sampled hashes; each of 4,096 requests' prefixes lives
// in three cells, and each iteration searches the next request.
func BenchmarkSearchCells(b *testing.B) {
	for _, n := range []int{64, 256, 1024} {
		r := rand.New(rand.NewPCG(9, uint64(n)))
		chains := make([][]blockhash.Hash, 4096)
		for i := range chains {
			chains[i] = make([]blockhash.Hash, 150)
			for j := range chains[i] {
				chains[i][j] = blockhash.Hash(r.Uint64())
			}
		}
		views := make([]CellView, n)
		bank := gossip.NewBank()
		for c := range n {
			bl, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
			if err != nil {
				b.Fatal(err)
			}
			for range 16 << 10 {
				bl.Add(blockhash.Hash(r.Uint64()), 4)
			}
			for i := c % 3; i < len(chains); i += 3 {
				if (i/3)%(n/3+1) == c/3 {
					bl.AddChain(chains[i][:20+i%130])
				}
			}
			s := bl.Build()
			views[c] = CellView{ID: fmt.Sprintf("cell-%04d", c), HTTPAddr: "h", GRPCAddr: "g", Alive: true, Summary: s,
				Load: CellLoad{ActiveBlocks: r.IntN(5000), LeastPodBlocks: r.IntN(200), Pods: 32}}
			bank.Set(c, s)
		}
		cfg := DefaultSearchConfig()
		order := LoadOrder(views)
		b.Run(fmt.Sprintf("linear/cells=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := range b.N {
				Search(cfg, views, chains[i%len(chains)], 0)
			}
		})
		b.Run(fmt.Sprintf("bank/cells=%d", n), func(b *testing.B) {
			var dst []gossip.CellDepth
			b.ReportAllocs()
			for i := range b.N {
				c := chains[i%len(chains)]
				dst = bank.Depths(c, dst[:0])
				SearchDepths(cfg, views, order, dst, c, 0)
			}
		})
	}
}
