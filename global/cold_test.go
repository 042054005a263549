package global

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	"github.com/cellrouter/cellrouter/gossip"
)

// holdingProber answers a probe as a cell of exact index would: its pick
// is its least loaded pod (the load the router's view of it shows, its own
// hand-offs included) and matches the prompts the cell was handed (by
// their first token), as deep as the longest one handed.
type holdingProber struct {
	mu     sync.Mutex
	held   map[string]map[uint32]int // cell -> first token -> tokens held
	probes int
}

func newHoldingProber() *holdingProber { return &holdingProber{held: map[string]map[uint32]int{}} }

func (p *holdingProber) Probe(_ context.Context, c *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.probes++
	n := min(p.held[c.ID][req.TokenIds[0]], len(req.TokenIds))
	return &cellv1.RouteResponse{Pick: &cellv1.Candidate{Pod: c.ID + "-p", MatchedBlocks: uint32(n / 16), Load: float64(c.Load.LeastPodBlocks)}}, nil
}

// hand records that cell now holds toks.
func (p *holdingProber) hand(cell string, toks []uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held[cell] == nil {
		p.held[cell] = map[uint32]int{}
	}
	p.held[cell][toks[0]] = max(p.held[cell][toks[0]], len(toks))
}

// coldFleet is 8 idle cells of 4 pods without summaries: every prompt is
// cold.
func coldFleet() []CellView {
	var views []CellView
	for i := range 8 {
		l := gossip.Load{FreeBlocks: 1 << 20, Pods: 4}
		l.SetLightest([]int{0, 0, 0, 0})
		id := fmt.Sprintf("cell-%d", i)
		views = append(views, CellView{ID: id, HTTPAddr: id + ":1", GRPCAddr: id + ":2", Alive: true, Load: CellLoad(l)})
	}
	return views
}

// TestColdBurstSpreads: a burst of distinct cold prompts between two
// gossip messages, with cell 0 gossiping idle pods and the others 48
// blocks on each pod, is probed (two hashed cells each) and placed on the
// lighter, each placement counted as the router's own load, so the burst
// fills cell 0 up to the others and then spreads: every cell's pods end
// within a few prompts of each other. Not counting the placements (the
// cold path before issue 24) piles every prompt paired with cell 0 onto
// it. With the cold probe off the unprobed placements are counted too.
func TestColdBurstSpreads(t *testing.T) {
	for _, tc := range []struct {
		name         string
		probe, count bool
		wantSpread   bool
	}{
		{"probed and counted", true, true, true},
		{"unprobed and counted", false, true, true},
		{"unprobed and not counted", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Search.ProbeCold = tc.probe
			// The in-process probes' round trips are noise on a loaded
			// machine (a millisecond weighs a block): the test is about
			// load, so distance weighs nothing, and no counted load may
			// expire while the race detector runs the burst.
			cfg.Choose.RTTWeight = 0
			cfg.RoutedLoadTTL = time.Hour
			pr := newHoldingProber()
			views := coldFleet()
			for i := 1; i < len(views); i++ {
				l := gossip.Load(views[i].Load)
				l.ActiveBlocks = 4 * 48
				l.SetLightest([]int{48, 48, 48, 48})
				views[i].Load = CellLoad(l)
			}
			rt, err := NewRouter(cfg, StaticDirectory(views), pr)
			if err != nil {
				t.Fatal(err)
			}
			const burst, blocks = 240, 16 // each prompt's 256 tokens
			per := make([]int, len(views))
			for i := range burst {
				req := &Request{Model: "m", TokenIDs: tokens(uint32(1000+i), 256)}
				d, err := rt.decideToSend(context.Background(), req, nil)
				if err != nil {
					t.Fatal(err)
				}
				if wantAnswers := map[bool]int{true: 2, false: 0}[tc.probe]; !d.Cold || len(d.Answers) != wantAnswers {
					t.Fatalf("prompt %d: cold %v with %d answers, want cold with %d", i, d.Cold, len(d.Answers), wantAnswers)
				}
				if tc.count {
					rt.noteRouted(d)
				}
				per[d.Order[0]]++
				pr.hand(d.Views[d.Order[0]].ID, req.TokenIDs)
			}
			// Each cell's pods' load at the end: gossiped plus its share.
			lo, hi := 1<<30, 0
			for c, n := range per {
				l := views[c].Load.LeastPodBlocks + n*blocks/4
				lo, hi = min(lo, l), max(hi, l)
			}
			// A cell is only chosen when it is one of a prompt's two
			// hashed cells: 6 prompts' worth of spread is allowed.
			const allowed = 6 * blocks / 4
			t.Logf("per cell %v, pods' load %d to %d", per, lo, hi)
			if spread := hi-lo <= allowed; spread != tc.wantSpread {
				t.Fatalf("%d cold prompts went %v (per cell); pods' load %d to %d: spread within %d is %v, want %v",
					burst, per, lo, hi, allowed, spread, tc.wantSpread)
			}
		})
	}
}

// TestColdFollowUpFindsItsFirstTurn: a follow-up that arrives before any
// summary shows its first turn is still cold, but its probes reach the
// same hashed cells, and the one holding the first turn (64 blocks) keeps
// it: the other's pick would have to be lighter by the prefill and the
// move of those blocks (128), and a burst of 16 first turns over 8 cells
// of 4 pods leaves no such gap. The round trips are not charged, so the
// measured distances cannot decide.
func TestColdFollowUpFindsItsFirstTurn(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Choose.RTTWeight = 0
	pr := newHoldingProber()
	rt, err := NewRouter(cfg, StaticDirectory(coldFleet()), pr)
	if err != nil {
		t.Fatal(err)
	}
	const turns = 16
	first := map[int]int{}
	for i := range turns {
		req := &Request{Model: "m", TokenIDs: tokens(uint32(5000+i), 1024)}
		d, err := rt.decideToSend(context.Background(), req, nil)
		if err != nil {
			t.Fatal(err)
		}
		rt.noteRouted(d)
		first[i] = d.Order[0]
		pr.hand(d.Views[d.Order[0]].ID, req.TokenIDs)
	}
	for i := range turns {
		toks := append(tokens(uint32(5000+i), 1024), tokens(uint32(9000+i), 64)...)
		d, err := rt.decideToSend(context.Background(), &Request{Model: "m", TokenIDs: toks}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Cold || len(d.Answers) != 2 {
			t.Fatalf("follow-up %d: cold %v with %d answers, want cold and probed", i, d.Cold, len(d.Answers))
		}
		if d.Order[0] != first[i] {
			t.Fatalf("follow-up %d went to cell %d, its first turn to %d (answers %+v)", i, d.Order[0], first[i], d.Answers)
		}
		rt.noteRouted(d)
	}
}
