package plugins

import (
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// TestKVCostPressure: a new prefix goes to the emptier cache when the pods
// holding its first blocks are full, a follow-up stays with its prefix on a
// full pod (copying it would evict as much again), and weight 0 is the
// reference cost.
func TestKVCostPressure(t *testing.T) {
	toks := tokens(200*16, 7) // 200 blocks
	req := &pipeline.Request{Model: "m", TokenIDs: toks}
	for _, tc := range []struct {
		name     string
		weight   float64
		setup    func(f *fleet)
		want     []string // any of these
		scoreOf0 float64  // pod-000's score
	}{
		{"a new prefix goes to the empty pod", 1, func(f *fleet) {
			f.hold(0, toks, 32) // the system prompt, on a full pod
			f.cands[0].HeldBlocks = 1000
			f.hold(1, toks, 32) // and on a half-full one
			f.cands[1].HeldBlocks = 500
		}, []string{"pod-002", "pod-003"}, -(168 + 168)},
		{"without pressure the holders win", 0, func(f *fleet) {
			f.hold(0, toks, 32)
			f.cands[0].HeldBlocks = 1000
			f.hold(1, toks, 32)
			f.cands[1].HeldBlocks = 500
		}, []string{"pod-000", "pod-001"}, -168},
		{"a follow-up stays on its full pod", 1, func(f *fleet) {
			f.hold(0, toks, 190)
			f.cands[0].HeldBlocks = 1000
		}, []string{"pod-000"}, -(10 + 10)},
		{"the half-full holder beats the full one", 1, func(f *fleet) {
			f.hold(0, toks, 150)
			f.cands[0].HeldBlocks = 1000
			f.hold(1, toks, 150)
			f.cands[1].HeldBlocks = 500
		}, []string{"pod-001"}, -(50 + 50)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFleet(t, 4)
			tc.setup(f)
			s := f.selector(t, WithPressureWeight(DefaultProfile("default", 1, 0, 0.95), tc.weight), nil)
			d := f.decide(t, s, req, 1)
			got := f.cands[d.Pick()].Pod
			ok := false
			for _, w := range tc.want {
				ok = ok || got == w
			}
			if !ok {
				t.Fatalf("picked %s, want one of %v (order %v scores %v)", got, tc.want, d.Order, d.Scores)
			}
			for k, i := range d.Order {
				if i == 0 && d.Scores[k] != tc.scoreOf0 {
					t.Fatalf("pod-000 scored %v, want %v", d.Scores[k], tc.scoreOf0)
				}
			}
		})
	}
}

// TestWithPressureWeight: the helpers that rewrite kv-cost's parameters
// keep each other's, and a negative weight fails the build naming the key.
func TestWithPressureWeight(t *testing.T) {
	p := WithPressureWeight(WithSpeculativeWeight(DefaultProfile("default", 2, 0, 0.95), 0.5), 0.25)
	var kc KVCost
	if err := p.Score[0].Params.Decode(&kc); err != nil {
		t.Fatal(err)
	}
	if kc.OverlapWeight != 2 || kc.SpeculativeWeight != 0.5 || kc.PressureWeight != 0.25 {
		t.Fatalf("kv-cost params %+v, want overlap 2, speculative 0.5, pressure 0.25", kc)
	}
	f := newFleet(t, 1)
	r := pipeline.NewRegistry()
	Register(r, Deps{Index: f.ix, Hasher: f.hasher})
	if _, err := r.Build(WithPressureWeight(DefaultProfile("x", 1, 0, 0.95), -1)); err == nil || !strings.Contains(err.Error(), "pressure_weight") {
		t.Fatalf("Build with pressure_weight -1: err %v, want one naming pressure_weight", err)
	}
}
