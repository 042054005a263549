package global

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
)

// TestHandoffTargetsEndpoints checks the hand-off's order over endpoint
// sets: each cell's replicas in turn (at most ReplicaAttempts), the chosen
// cell's before the next cell's, and a cell of a static directory as its
// one address.
func TestHandoffTargetsEndpoints(t *testing.T) {
	d := &Decision{Order: []int{1, 0}, Views: []CellView{
		{ID: "a", HTTPAddr: "a1"},
		{ID: "b", HTTPAddr: "b1", Endpoints: []Endpoint{{Name: "b/1", HTTPAddr: "b1"}, {Name: "b/2", HTTPAddr: "b2"}, {Name: "b/3", HTTPAddr: "b3"}}},
	}}
	for _, tc := range []struct {
		turn uint64
		want []string
	}{
		{0, []string{"b1", "b2", "a1"}},
		{1, []string{"b2", "b3", "a1"}},
		{2, []string{"b3", "b1", "a1"}},
		{3, []string{"b1", "b2", "a1"}},
	} {
		var got []string
		for _, tg := range handoffTargets(d, tc.turn) {
			got = append(got, tg.Address)
			if tg.Header.Get(CellHeader) != tg.Pod {
				t.Fatalf("target %+v: cell header %q, want %q", tg, tg.Header.Get(CellHeader), tg.Pod)
			}
		}
		if len(got) != len(tc.want) {
			t.Fatalf("turn %d: targets %v, want %v", tc.turn, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("turn %d: targets %v, want %v", tc.turn, got, tc.want)
			}
		}
	}
}

// endpointsOf returns the live endpoints d's router sees for cell.
func endpointsOf(d *Daemon, cell string) int {
	for _, v := range d.Router().views() {
		if v.ID == cell && v.Alive {
			return len(v.Endpoints)
		}
	}
	return 0
}

// TestReplicatedTiers runs two globald and a cell of two replicas (and a
// second cell) in one pool: both globald answer, both see the cell's two
// endpoints, a replica's stop under load only shrinks the set with no
// client error, and a cell drain issued at one globald holds at the other.
func TestReplicatedTiers(t *testing.T) {
	hits := &sync.Map{}
	g1 := startDaemon(t)
	g2 := startDaemon(t, g1.GossipAddr())
	seed := g1.GossipAddr()
	r1 := startPoolReplica(t, "cell-a", "r1", seed, hits)
	startPoolReplica(t, "cell-a", "r2", seed, hits)
	startPoolCell(t, "cell-b", seed, hits)
	for _, g := range []*Daemon{g1, g2} {
		waitFor(t, "both cells and cell-a's two endpoints", func() bool {
			return knows(g, "cell-a", "cell-b") && endpointsOf(g, "cell-a") == 2
		})
	}
	listed := func(g *Daemon) []*globalv1.CellEndpoint {
		resp, err := (&service{rt: g.rt, g: g.Global}).ListCells(context.Background(), &globalv1.ListCellsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.GetCells() {
			if c.GetId() == "cell-a" {
				return c.GetEndpoints()
			}
		}
		return nil
	}
	if eps := listed(g2); len(eps) != 2 || eps[0].GetName() == eps[1].GetName() || eps[0].GetHttpAddr() == eps[1].GetHttpAddr() || eps[0].GetGrpcAddr() == "" {
		t.Fatalf("ListCells shows cell-a's endpoints as %v, want its two replicas", eps)
	}
	urls := []string{"http://" + g1.HTTPAddr() + "/v1/completions", "http://" + g2.HTTPAddr() + "/v1/completions"}
	var stop atomic.Bool
	var errs, ok atomic.Int64
	var wg sync.WaitGroup
	for w, url := range urls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				resp, _ := post(t, url, map[string]any{"model": "m", "prompt": tokens(uint32(5000+w*100000+i), 64), "max_tokens": 1})
				if resp.StatusCode != 200 {
					errs.Add(1)
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	// The clients end before the test does, even when a wait below fails:
	// a client still posting after the test ended would report to a test
	// that is over.
	stopClients := sync.OnceFunc(func() { stop.Store(true); wg.Wait() })
	defer stopClients()
	waitFor(t, "requests answered through both globald", func() bool { return ok.Load() >= 20 })
	r1.stop() // leaves the pool, as a SIGTERM'd replica does
	for _, g := range []*Daemon{g1, g2} {
		waitFor(t, "cell-a down to one endpoint", func() bool { return endpointsOf(g, "cell-a") == 1 && knows(g, "cell-a") })
	}
	if eps := listed(g1); len(eps) != 1 {
		t.Fatalf("ListCells shows cell-a's endpoints as %v after a replica left, want one", eps)
	}
	seen := ok.Load()
	waitFor(t, "more requests after the replica left", func() bool { return ok.Load() >= seen+20 })
	stopClients()
	if n := errs.Load(); n != 0 {
		t.Fatalf("%d client errors while a replica left", n)
	}
	svc := &service{rt: g1.rt, g: g1.Global}
	if _, err := svc.DrainCell(context.Background(), &globalv1.DrainCellRequest{Id: "cell-b"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the drain of cell-b at the other globald", func() bool {
		for _, v := range g2.Router().views() {
			if v.ID == "cell-b" {
				return v.Draining
			}
		}
		return false
	})
}
