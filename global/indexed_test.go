package global

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// tableOf returns a gossip table holding the views' cells, each with its
// summary as generation gen of epoch 1.
func tableOf(t testing.TB, views []CellView, gen uint64) *gossip.Table {
	t.Helper()
	tab := gossip.NewTable(nil)
	for _, v := range views {
		setCell(t, tab, v, gen)
	}
	return tab
}

// setCell makes v's cell a member of tab, with v's summary (a
// *gossip.Summary) as generation gen.
func setCell(t testing.TB, tab *gossip.Table, v CellView, gen uint64) {
	t.Helper()
	node := "n-" + v.ID
	tab.SetMember(gossip.Member{Name: node, Role: gossip.RoleCell, CellID: v.ID, HTTPAddr: v.HTTPAddr, GRPCAddr: v.GRPCAddr, State: gossip.StateAlive})
	s := v.Summary.(*gossip.Summary)
	l := gossip.Load{ActiveBlocks: v.Load.ActiveBlocks}
	if _, err := tab.ApplyHeader(&gossip.Header{Cell: v.ID, Node: node, Epoch: 1, Gen: gen, Seq: gen, Load: l, Params: s.Params(), Elements: s.Elements()}); err != nil {
		t.Fatal(err)
	}
	if _, err := tab.ApplySnapshot(&gossip.Snapshot{Cell: v.ID, Node: node, Epoch: 1, Gen: gen, Params: s.Params(), Elements: s.Elements(), Bits: s.Words()}); err != nil {
		t.Fatal(err)
	}
}

// randomCells returns n cells whose summaries hold prefixes of the
// returned requests' chains (and the requests' tokens).
func randomCells(t testing.TB, r *rand.Rand, n int) ([]CellView, [][]blockhash.Hash, [][]uint32) {
	t.Helper()
	h := blockhash.DefaultHasher()
	seed := blockhash.Seed(blockhash.Keys{Model: "m"})
	var reqs [][]blockhash.Hash
	var tokens [][]uint32
	for range 40 {
		toks := make([]uint32, 16*(8+r.IntN(120)))
		for j := range toks {
			toks[j] = r.Uint32() % 100000
		}
		tokens = append(tokens, toks)
		reqs = append(reqs, h.Chain(seed, toks, nil))
	}
	views := make([]CellView, n)
	for i := range views {
		cfg := gossip.DefaultSummaryConfig()
		cfg.ExpectedElements = 256
		b, err := gossip.NewBuilder(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range reqs {
			if r.IntN(4) == 0 {
				for d, x := range c[:1+r.IntN(len(c))] {
					b.Add(x, d+1)
				}
			}
		}
		s := b.Build()
		views[i] = CellView{ID: fmt.Sprintf("cell-%03d", i), HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", Alive: true, Summary: s,
			Load: CellLoad{ActiveBlocks: r.IntN(1000)}}
	}
	return views, reqs, tokens
}

// naiveDepths is every view's own summary's depth of chain, where above 0.
func naiveDepths(views []CellView, chain []blockhash.Hash) []gossip.CellDepth {
	var out []gossip.CellDepth
	for i, v := range views {
		if v.Summary != nil {
			if d := v.Summary.Depth(chain); d > 0 {
				out = append(out, gossip.CellDepth{Cell: i, Depth: d})
			}
		}
	}
	return out
}

func sortedDepths(d []gossip.CellDepth) []gossip.CellDepth {
	slices.SortFunc(d, func(a, b gossip.CellDepth) int { return a.Cell - b.Cell })
	return d
}

// TestIndexedDirectoryAgainstEachSummary: the gossip directory's depths
// (one search over all summaries) are each view's own summary's, through
// cells joining, leaving and publishing new generations; and the depths of
// an older snapshot never name a cell that is not in it.
func TestIndexedDirectoryAgainstEachSummary(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	views, reqs, _ := randomCells(t, r, 40)
	tab := tableOf(t, views[:30], 1)
	dir := NewGossipDirectory(tab)
	check := func(step string) ([]CellView, DepthsFunc) {
		t.Helper()
		vs, depths := dir.CellsAndDepths()
		for k, c := range reqs {
			got := sortedDepths(depths(c, nil))
			if want := naiveDepths(vs, c); !slices.Equal(got, want) {
				t.Fatalf("%s: request %d: depths %v, want %v", step, k, got, want)
			}
		}
		return vs, depths
	}
	old, oldDepths := check("30 cells")
	// Ten more cells join, five leave, five publish a new generation.
	for _, v := range views[30:] {
		setCell(t, tab, v, 1)
	}
	for _, v := range views[:5] {
		tab.RemoveMember("n-" + v.ID)
	}
	for i := 5; i < 10; i++ {
		v := views[i]
		v.Summary = views[39-i].Summary
		setCell(t, tab, v, 2)
	}
	check("after churn")
	// The older snapshot's depths still index its own views: the cells
	// that left are absent, the rest still name the same cell ids.
	for _, c := range reqs {
		for _, d := range oldDepths(c, nil) {
			if d.Cell < 5 || d.Cell >= len(old) {
				t.Fatalf("an older snapshot's depths name view %d (%s), which left or was never in it", d.Cell, old[d.Cell].ID)
			}
		}
	}
}

// TestRouterSearchesThroughTheIndex: a router over the gossip directory
// chooses the same candidates as one over the same views searched cell by
// cell.
func TestRouterSearchesThroughTheIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	views, _, tokens := randomCells(t, r, 24)
	dir := NewGossipDirectory(tableOf(t, views, 1))
	gviews := dir.Cells()
	indexed, err := NewRouter(DefaultConfig(), dir, instantProber{})
	if err != nil {
		t.Fatal(err)
	}
	linear, err := NewRouter(DefaultConfig(), StaticDirectory(gviews), instantProber{})
	if err != nil {
		t.Fatal(err)
	}
	known := 0
	for k, toks := range tokens {
		req := &Request{Model: "m", TokenIDs: toks}
		a, errA := indexed.Decide(context.Background(), req)
		b, errB := linear.Decide(context.Background(), req)
		if errA != nil || errB != nil || !slices.Equal(a.Candidates, b.Candidates) || a.Cold != b.Cold {
			t.Fatalf("request %d: indexed %+v (%v), linear %+v (%v)", k, a.Candidates, errA, b.Candidates, errB)
		}
		if !a.Cold {
			known++
		}
	}
	if known < len(tokens)/2 {
		t.Fatalf("%d of %d requests known to a summary, want most", known, len(tokens))
	}
}

// BenchmarkDecideCells times the global decision (probes answering at
// once) over 64, 256 and 1,024 cells of 16k blocks each, through the
// gossip directory (its inverted index over the summaries) and through the
// same views searched cell by cell; it reports the p99 of single decisions.
func BenchmarkDecideCells(b *testing.B) {
	var reqs [][]uint32
	for i := range 64 {
		t := make([]uint32, 64*16)
		for j := range t {
			t[j] = uint32(i*100000 + j)
		}
		reqs = append(reqs, t)
	}
	for _, n := range []int{64, 256, 1024} {
		views := benchCells(b, n, 16<<10, reqs)
		dir := NewGossipDirectory(tableOf(b, views, 1))
		for _, tc := range []struct {
			name string
			dir  Directory
		}{{"indexed", dir}, {"linear", StaticDirectory(dir.Cells())}} {
			b.Run(fmt.Sprintf("cells=%d/%s", n, tc.name), func(b *testing.B) {
				rt, err := NewRouter(DefaultConfig(), tc.dir, instantProber{})
				if err != nil {
					b.Fatal(err)
				}
				lat := make([]time.Duration, 0, b.N)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					start := time.Now()
					if _, err := rt.Decide(context.Background(), &Request{Model: "m", TokenIDs: reqs[i%len(reqs)]}); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
				}
				b.StopTimer()
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
				b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
			})
		}
	}
}
