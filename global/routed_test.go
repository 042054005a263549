package global

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/gossip"
)

// TestRoutedLoads: the load a router adds by its own routing shows in its
// views until the cell gossips a new load, and only the chosen cell's.
func TestRoutedLoads(t *testing.T) {
	gossiped := CellLoad{ActiveRequests: 3, ActiveBlocks: 900, FreeBlocks: 5000, Pods: 4}
	views := []CellView{{ID: "a", Load: gossiped}, {ID: "b", Load: gossiped}}
	m := newRoutedLoads(DefaultRoutedLoadTTL)
	// 50 blocks over 4 pods raise the least loaded pod by 13.
	m.note(&views[0], gossiped, 50, -1)
	got := []CellView{{ID: "a", Load: gossiped}, {ID: "b", Load: gossiped}}
	m.apply(got)
	want := CellLoad{ActiveRequests: 4, ActiveBlocks: 950, FreeBlocks: 4950, Pods: 4, LeastPodBlocks: 13}
	if got[0].Load != want || got[1].Load != gossiped {
		t.Fatalf("after one request got %+v and %+v, want %+v and the gossiped %+v", got[0].Load, got[1].Load, want, gossiped)
	}
	// A second request adds its share again.
	m.note(&got[0], gossiped, 50, -1)
	again := []CellView{{ID: "a", Load: gossiped}}
	m.apply(again)
	if again[0].Load.LeastPodBlocks != 26 || again[0].Load.ActiveBlocks != 1000 {
		t.Fatalf("after a second request got %+v, want least 26, active 1000", again[0].Load)
	}
	// Without a pod count the least loaded pod stays as gossiped.
	unknown := CellLoad{ActiveBlocks: 5, LeastPodBlocks: 2}
	unknown.Routed(50, -1)
	if unknown.LeastPodBlocks != 2 || unknown.ActiveBlocks != 55 {
		t.Fatalf("without pods got %+v, want least 2, active 55", unknown)
	}
	// The cell gossips again: the entry is dropped and the new load shown.
	fresh := gossiped
	fresh.ActiveBlocks = 1200
	later := []CellView{{ID: "a", Load: fresh}}
	m.apply(later)
	if later[0].Load != fresh || !m.empty() {
		t.Fatalf("after new gossip got %+v with %d entries, want %+v and none", later[0].Load, len(m.m), fresh)
	}
}

// TestNoteRoutedCountsTheCellThatTakesTheRequest: the data plane counts a
// request against the cell chosen on its probe answer, against a lone
// candidate handed the request without a probe and against an unprobed
// cold prompt's cell (a burst of them would otherwise all see the same
// light cell), but not against a cell nobody probed or chose, nor a cell
// whose probe failed (a fallback).
func TestNoteRoutedCountsTheCellThatTakesTheRequest(t *testing.T) {
	load := CellLoad{ActiveRequests: 1, ActiveBlocks: 100, FreeBlocks: 1000, Pods: 2}
	views := []CellView{{ID: "a", Load: load}, {ID: "b", Load: load}}
	for _, tc := range []struct {
		name string
		d    Decision
		want bool
	}{
		{"chosen on its answer", Decision{Order: []int{1, 0}, Answers: []ProbeAnswer{{Cell: 0}, {Cell: 1}}}, true},
		{"lone candidate without a probe", Decision{Order: []int{1}, Unprobed: true}, true},
		{"unprobed cold prompt", Decision{Order: []int{1}, Cold: true}, true},
		{"cold prompt chosen on its answer", Decision{Order: []int{1, 0}, Cold: true, Answers: []ProbeAnswer{{Cell: 0}, {Cell: 1}}}, true},
		{"neither probed nor chosen", Decision{Order: []int{1}}, false},
		{"cold prompt whose probe failed", Decision{Order: []int{1, 0}, Cold: true, Answers: []ProbeAnswer{{Cell: 1, Err: errNoPick}}}, false},
		{"its probe failed", Decision{Order: []int{1, 0}, Answers: []ProbeAnswer{{Cell: 1, Err: errNoPick}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := NewRouter(DefaultConfig(), StaticDirectory(views), instantProber{})
			if err != nil {
				t.Fatal(err)
			}
			d := tc.d
			d.Views, d.gossiped, d.Blocks = views, views, 40
			rt.noteRouted(&d)
			got := rt.views()
			if noted := got[1].Load != load; noted != tc.want {
				t.Fatalf("cell b's load %+v: noted %v, want %v", got[1].Load, noted, tc.want)
			}
			if got[0].Load != load {
				t.Fatalf("cell a's load changed to %+v", got[0].Load)
			}
		})
	}
}

// TestRoutedFollowsTheLightestPods: with the lightest pods gossiped and the
// pick's load from its probe, the global tier's view of the cell follows a
// naive model of the cell's pods (every pod's load, the pick's raised by
// the request) for as long as the picks fall among the pods it was told of.
func TestRoutedFollowsTheLightestPods(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		pods := make([]int, 1+r.IntN(20))
		for i := range pods {
			pods[i] = r.IntN(10) * 50
		}
		var g gossip.Load
		g.SetLightest(pods)
		l := CellLoad{Pods: len(pods), LeastPodBlocks: g.LeastPodBlocks, Lightest: g.Lightest, NLightest: g.NLightest}
		// The model: the pods the gossip named, by load.
		model := slices.Clone(l.Lightest[:l.NLightest])
		for range 1 + r.IntN(12) {
			blocks := 1 + r.IntN(300)
			var pick int
			if r.IntN(4) == 0 {
				pick = 1 << 20 // a pod picked for its prefix, beyond the lightest
			} else {
				pick = model[r.IntN(len(model))]
			}
			l.Routed(blocks, pick)
			if j := slices.Index(model, pick); j >= 0 {
				model[j] += blocks
			}
			slices.Sort(model)
			if got := l.Lightest[:l.NLightest]; !slices.Equal(got, model) || l.LeastPodBlocks != model[0] {
				t.Fatalf("trial %d: after a request of %d blocks to a pod of %d: got %v (least %d), want %v",
					trial, blocks, pick, got, l.LeastPodBlocks, model)
			}
		}
	}
	// A pick whose load fell since the cell gossiped (its requests ended)
	// is the least loaded of the lightest pods above it.
	stale := CellLoad{Pods: 4, LeastPodBlocks: 10, Lightest: [gossip.LightestPods]int{10, 20, 30}, NLightest: 3}
	stale.Routed(100, 15)
	if got := stale.Lightest[:stale.NLightest]; !slices.Equal(got, []int{10, 30, 115}) || stale.LeastPodBlocks != 10 {
		t.Fatalf("stale pick: got %v (least %d), want 10, 30, 115", got, stale.LeastPodBlocks)
	}
	stale.Routed(100, 5)
	if got := stale.Lightest[:stale.NLightest]; !slices.Equal(got, []int{30, 105, 115}) || stale.LeastPodBlocks != 30 {
		t.Fatalf("stale least pick: got %v (least %d), want 30, 105, 115", got, stale.LeastPodBlocks)
	}
	// Without a probe's pick, every lightest pod rises by the request's
	// share, as the least loaded pod does without the list.
	l := CellLoad{Pods: 4, LeastPodBlocks: 10, Lightest: [gossip.LightestPods]int{10, 20}, NLightest: 2}
	l.Routed(50, -1)
	if l.LeastPodBlocks != 23 || l.Lightest[0] != 23 || l.Lightest[1] != 33 {
		t.Fatalf("unprobed: got %+v, want least 23, lightest 23, 33", l)
	}
}
