package cell

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// TestFlowPodsMatchesNaive checks flowPods against a naive model over
// random decisions: the pods in the order of their first candidate, each
// once (a pod with several holders, pod#rank, counts its deepest), and
// each one's detour, the blocks the first pod holds beyond it; no
// detours when the first pod matched nothing. The decisions are long
// enough to cross flowPods' switch from a scan to a map at 16 pods.
func TestFlowPodsMatchesNaive(t *testing.T) {
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	h := blockhash.DefaultHasher()
	toks := make([]uint32, 64*16)
	for i := range toks {
		toks[i] = uint32(i)
	}
	chain := h.Chain(blockhash.Seed(blockhash.Keys{Model: "m"}), toks, nil)
	var cands []pipeline.Candidate
	for p := 0; p < 24; p++ {
		for rank := 0; rank < 1+p%2; rank++ { // odd pods have two holders
			holder := fmt.Sprintf("pod-%02d#%d", p, rank)
			s, err := ix.Register(holder)
			if err != nil {
				t.Fatal(err)
			}
			cands = append(cands, pipeline.Candidate{Target: &pipeline.Target{Pod: fmt.Sprintf("pod-%02d", p), Holder: holder}, Slot: s, HasSlot: true})
		}
	}
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 3))
		depth := make([]int, len(cands))
		for i := range cands {
			ix.Remove(cands[i].Slot, index.TierGPU, chain)
			if rng.IntN(3) > 0 {
				depth[i] = rng.IntN(len(chain) + 1)
				ix.Store(cands[i].Slot, index.TierGPU, chain[:depth[i]])
			}
		}
		rc := pipeline.NewContext(&pipeline.Request{Model: "m"}, cands, rng)
		m := rc.MatchScratch()
		ix.Match(chain, m)
		pipeline.Match.Set(rc, m)
		order := rng.Perm(len(cands))[:1+rng.IntN(len(cands))]
		d := &decision{rc: rc, plan: pipeline.Plan{Single: pipeline.Decision{Order: order}}}

		var wantPods []string
		wantDepth := map[string]int{}
		for _, ci := range order {
			pod := cands[ci].Pod
			if !slices.Contains(wantPods, pod) {
				wantPods = append(wantPods, pod)
			}
			wantDepth[pod] = max(wantDepth[pod], depth[ci])
		}
		var wantDetours []float64
		if first := wantDepth[wantPods[0]]; first > 0 {
			for _, p := range wantPods {
				wantDetours = append(wantDetours, float64(max(0, first-wantDepth[p])))
			}
		}

		pods, detours := flowPods(d, true)
		if !slices.Equal(pods, wantPods) || !slices.Equal(detours, wantDetours) {
			t.Fatalf("seed %d: flowPods = %v %v, want %v %v", seed, pods, detours, wantPods, wantDetours)
		}
		if got := podsOf(d); !slices.Equal(got, wantPods) {
			t.Fatalf("seed %d: flowPods without detours = %v, want %v", seed, got, wantPods)
		}
		if _, none := flowPods(d, false); none != nil {
			t.Fatalf("seed %d: detours without asking: %v", seed, none)
		}
	}
}

// podsOf is flowPods' pods without the detours.
func podsOf(d *decision) []string {
	pods, _ := flowPods(d, false)
	return pods
}
