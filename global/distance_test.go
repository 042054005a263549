package global

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/gossip"
)

// TestDistanceIsTheLeastRecentRoundTrip checks distances against a naive
// model: the least of each cell's last distanceWindow samples.
func TestDistanceIsTheLeastRecentRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	d := newDistances()
	model := map[string][]time.Duration{}
	cells := []string{"a", "b", "c"}
	for i := 0; i < 2000; i++ {
		c := cells[rng.IntN(len(cells))]
		if rng.IntN(4) > 0 {
			rtt := time.Duration(rng.IntN(50_000)) * time.Microsecond
			d.observe(c, rtt)
			model[c] = append(model[c], rtt)
		}
		want := time.Duration(0)
		if s := model[c]; len(s) > 0 {
			s = s[max(0, len(s)-distanceWindow):]
			want = s[0]
			for _, x := range s {
				want = min(want, x)
			}
		}
		if got := d.of(c); got != want {
			t.Fatalf("step %d: distance of %s = %v, the least of its last %d samples is %v", i, c, got, distanceWindow, want)
		}
	}
	if got := d.of("never"); got != 0 {
		t.Fatalf("a cell never measured is at %v, want 0", got)
	}
}

func TestChooseChargesDistance(t *testing.T) {
	cfg := DefaultChooseConfig()
	answers := []ProbeAnswer{
		{Cell: 0, Matched: 40, Distance: 50 * time.Millisecond, RTT: 50 * time.Millisecond},
		{Cell: 1, Matched: 20, Distance: time.Millisecond, RTT: 90 * time.Millisecond},
	}
	// Cell 0 saves 20 more blocks, worth 40 with the move (the prefill
	// and the copy), but is 49 ms farther: 49 > 40.
	if got := Choose(cfg, answers, 64); got[0] != 1 {
		t.Fatalf("order %v: the nearer cell should win when the distance outweighs the prefix", got)
	}
	// The probe's own RTT is not charged: only the distance is.
	answers[0].Distance = 5 * time.Millisecond
	if got := Choose(cfg, answers, 64); got[0] != 0 {
		t.Fatalf("order %v: the deeper cell should win at 5 ms", got)
	}
}

// slowOpeningProber answers every probe from a table of matched depths;
// probes of slow cells take delay and report whether they opened their
// connection.
type slowOpeningProber struct {
	matched map[string]int
	slow    map[string]bool
	delay   time.Duration
	opened  bool
}

func (p *slowOpeningProber) Probe(ctx context.Context, c *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	resp, _, err := p.ProbeOpening(ctx, c, req)
	return resp, err
}

func (p *slowOpeningProber) ProbeOpening(ctx context.Context, c *CellView, _ *cellv1.RouteRequest) (*cellv1.RouteResponse, bool, error) {
	opened := false
	if p.slow[c.ID] {
		time.Sleep(p.delay)
		opened = p.opened
	}
	return &cellv1.RouteResponse{Pick: &cellv1.Candidate{Pod: c.ID + "-p0", MatchedBlocks: uint32(p.matched[c.ID])}}, opened, nil
}

// TestOpeningProbeIsNoDistance: the first probe to the cell holding a
// prompt's prefix opens its connection and takes long; the choice must not
// charge that to the cell (a chat's second turn went elsewhere), while the
// same delay on an open connection is the cell's distance.
func TestOpeningProbeIsNoDistance(t *testing.T) {
	toks := make([]uint32, 12*16)
	for i := range toks {
		toks[i] = uint32(1000 + i)
	}
	h := blockhash.DefaultHasher()
	chain := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	views := make([]CellView, 2)
	for i := range views {
		bld, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
		if err != nil {
			t.Fatal(err)
		}
		for d, x := range chain { // both summaries know the prefix: both are probed
			bld.Add(x, d+1)
		}
		s := bld.Build()
		views[i] = CellView{ID: fmt.Sprintf("cell-%d", i), HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", Alive: true, Summary: s}
	}
	for _, tc := range []struct {
		opened bool
		want   string
	}{{true, "cell-0"}, {false, "cell-1"}} {
		// cell-0 holds all 12 blocks; cell-1 none. The slow probe takes
		// 200 ms, far more than 12 blocks' worth at 1 block per ms.
		pr := &slowOpeningProber{matched: map[string]int{"cell-0": 12}, slow: map[string]bool{"cell-0": true}, delay: 200 * time.Millisecond, opened: tc.opened}
		cfg := DefaultConfig()
		cfg.ProbeTimeout = 5 * time.Second
		rt, err := NewRouter(cfg, StaticDirectory(views), pr)
		if err != nil {
			t.Fatal(err)
		}
		d, err := rt.Decide(context.Background(), &Request{Model: "m", TokenIDs: toks})
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Answers) != 2 {
			t.Fatalf("opened=%v: %d probes, want both cells probed", tc.opened, len(d.Answers))
		}
		if got := views[d.Order[0]].ID; got != tc.want {
			t.Fatalf("opened=%v: chose %s, want %s (answers %+v)", tc.opened, got, tc.want, d.Answers)
		}
	}
}

// TestChooseWeighsBusyPicksByCost: a cell whose pick is busy (its every
// pod was, and its soft filter was ignored) is ordered by its cost like any
// other, its load in it, and only comes after a pick of equal cost that is
// not busy; with AvoidBusy it comes after every pick that is not, however
// cheap, as the flat router's soft busy filter passes over busy pods while
// others are left, and among busy picks, and among the others, cost
// decides.
func TestChooseWeighsBusyPicksByCost(t *testing.T) {
	answers := []ProbeAnswer{
		{Cell: 0, Matched: 60, Load: 100, Busy: true}, // cost 2*4 + 100 = 108
		{Cell: 1, Matched: 0, Load: 900},              // 2*64 + 900 = 1028
		{Cell: 2, Matched: 10, Load: 100, Busy: true}, // 2*54 + 100 = 208
		{Cell: 3, Err: errNoPick},
		{Cell: 4, Matched: 30, Load: 900}, // 2*34 + 900 = 968
		{Cell: 5, Matched: 10, Load: 100}, // 208, as cell 2, and not busy
	}
	for _, tc := range []struct {
		avoid bool
		want  []int
	}{
		{false, []int{0, 5, 2, 4, 1, 3}},
		{true, []int{5, 4, 1, 0, 2, 3}},
	} {
		cfg := DefaultChooseConfig()
		cfg.AvoidBusy = tc.avoid
		if got := Choose(cfg, answers, 64); !slices.Equal(got, tc.want) {
			t.Fatalf("AvoidBusy %v: order %v, want %v", tc.avoid, got, tc.want)
		}
	}
}

// TestChooseBreaksTiesToTheLessLoadedCell: picks of equal cost go to the
// less loaded cell first, as the flat router's random tie-breaks spread
// them, rather than all to the cell searched first.
func TestChooseBreaksTiesToTheLessLoadedCell(t *testing.T) {
	cfg := DefaultChooseConfig()
	answers := []ProbeAnswer{
		{Cell: 0, Matched: 0, Load: 0, CellBlocks: 900},
		{Cell: 1, Matched: 0, Load: 0, CellBlocks: 100},
		{Cell: 2, Matched: 0, Load: 0, CellBlocks: 500},
		{Cell: 3, Matched: 1, Load: 0, CellBlocks: 5000}, // cheaper: first however loaded
	}
	if got, want := Choose(cfg, answers, 64), []int{3, 1, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// busyProber answers each cell's probe with its own response.
type busyProber map[string]*cellv1.RouteResponse

func (p busyProber) Probe(_ context.Context, c *CellView, _ *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	return p[c.ID], nil
}

// TestDecideCarriesBusyAndCellLoadToChoose: the router takes a probe's
// failed_open as a busy pick and each cell's known load as its tie-break,
// so Choose orders by them: among equal costs a pick that is not busy,
// then the less loaded cell; with AvoidBusy a busy cheap pick after one
// that is not.
func TestDecideCarriesBusyAndCellLoadToChoose(t *testing.T) {
	toks := make([]uint32, 64*16)
	for i := range toks {
		toks[i] = uint32(i)
	}
	chain := blockhash.DefaultHasher().Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	summary := func(depth int) *gossip.Summary {
		b, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
		if err != nil {
			t.Fatal(err)
		}
		for d, x := range chain[:depth] {
			b.Add(x, d+1)
		}
		return b.Build()
	}
	// The search ranks a first (its summary knows more), though it is the
	// more loaded cell.
	views := []CellView{
		{ID: "a", HTTPAddr: "127.0.0.1:1", GRPCAddr: "127.0.0.1:2", Alive: true, Summary: summary(32), Load: CellLoad{ActiveBlocks: 900}},
		{ID: "b", HTTPAddr: "127.0.0.1:3", GRPCAddr: "127.0.0.1:4", Alive: true, Summary: summary(16), Load: CellLoad{ActiveBlocks: 100}},
	}
	pick := func(matched uint32, failedOpen bool) *cellv1.RouteResponse {
		return &cellv1.RouteResponse{Pick: &cellv1.Candidate{Pod: "p", MatchedBlocks: matched}, FailedOpen: failedOpen}
	}
	for _, tc := range []struct {
		name   string
		avoid  bool
		answer busyProber
		want   string
	}{
		{"a busy cheap pick goes first by its cost", false, busyProber{"a": pick(0, false), "b": pick(16, true)}, "b"},
		{"avoiding busy picks, a busy cheap pick goes after one that is not", true, busyProber{"a": pick(0, false), "b": pick(16, true)}, "a"},
		{"a cheaper pick goes first", false, busyProber{"a": pick(0, false), "b": pick(16, false)}, "b"},
		{"equal costs go to the less loaded cell", false, busyProber{"a": pick(16, false), "b": pick(16, false)}, "b"},
		{"equal costs go to a pick that is not busy first", false, busyProber{"a": pick(16, false), "b": pick(16, true)}, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Choose.AvoidBusy = tc.avoid
			// No charge for distance: the probes' round trips differ by
			// microseconds, which would otherwise decide equal costs.
			cfg.Choose.RTTWeight = 0
			rt, err := NewRouter(cfg, StaticDirectory(views), tc.answer)
			if err != nil {
				t.Fatal(err)
			}
			d, err := rt.Decide(context.Background(), &Request{Model: "m", TokenIDs: toks})
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Answers) != 2 || len(d.Order) == 0 || views[d.Order[0]].ID != tc.want {
				t.Fatalf("answers %+v, order %v: want both probed and %s first", d.Answers, d.Order, tc.want)
			}
		})
	}
}
