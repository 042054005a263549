package plugins

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// TestBatchFiltersMatchKeep checks the BatchFilter contract for every
// in-tree filter: KeepAll keeps exactly the candidates Keep keeps, in order,
// and rejects the others with Keep's reason under the filter's type.
func TestBatchFiltersMatchKeep(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	filters := []pipeline.BatchFilter{
		Healthy{},
		RoleFilter{},
		&Concurrency{MaxRequests: 4},
		&Busy{Threshold: 0.7},
		&Busy{Threshold: 0.333333},
	}
	for round := 0; round < 200; round++ {
		cands := make([]pipeline.Candidate, 1+rng.IntN(64))
		for i := range cands {
			total := rng.IntN(4) * 300 // some pods of unknown size
			cands[i] = pipeline.Candidate{
				Healthy:        rng.IntN(5) > 0,
				Draining:       rng.IntN(6) == 0,
				Role:           pipeline.Role(rng.IntN(3)),
				ActiveRequests: rng.IntN(8),
				TotalBlocks:    total,
				ActiveBlocks:   rng.IntN(total + 1),
			}
		}
		phase := pipeline.Role(rng.IntN(3))
		in := make([]int, 0, len(cands))
		for i := range cands {
			if rng.IntN(4) > 0 {
				in = append(in, i)
			}
		}
		for _, f := range filters {
			rc := pipeline.NewContext(&pipeline.Request{}, cands, nil)
			rc.Phase = phase
			var wantKept []int
			var wantRej []pipeline.Rejection
			for _, i := range in {
				if ok, why := f.Keep(rc, i); ok {
					wantKept = append(wantKept, i)
				} else {
					wantRej = append(wantRej, pipeline.Rejection{Candidate: i, Filter: f.Type(), Reason: why})
				}
			}
			gotKept := f.KeepAll(rc, in, nil)
			if !slices.Equal(gotKept, wantKept) {
				t.Fatalf("round %d %s: KeepAll kept %v, Keep keeps %v", round, f.Type(), gotKept, wantKept)
			}
			if got := rc.Rejected(); !slices.Equal(got, wantRej) {
				t.Fatalf("round %d %s: KeepAll rejected %v, Keep rejects %v", round, f.Type(), got, wantRej)
			}
		}
	}
}

// keepOnly hides a filter's KeepAll, so the selector falls back to calling
// Keep once per candidate.
type keepOnly struct{ pipeline.Filter }

// TestSelectorPerCandidateFilterPath runs the default profile twice over the
// same random fleets: once with the in-tree batch filters and once with the
// same filters seen only through Keep. Both paths through Selector.filter
// must reach the same decision and record the same rejections.
func TestSelectorPerCandidateFilterPath(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	toks := tokens(32*16, 9)
	for round := 0; round < 40; round++ {
		f := newFleet(t, 2+rng.IntN(14))
		for i := range f.cands {
			c := &f.cands[i]
			c.Healthy = rng.IntN(6) > 0
			c.Draining = rng.IntN(8) == 0
			c.Role = pipeline.Role(rng.IntN(3))
			c.ActiveBlocks = rng.IntN(c.TotalBlocks + 1)
			c.ActiveRequests = rng.IntN(10)
			f.hold(i, toks, rng.IntN(33))
		}
		r := pipeline.NewRegistry()
		Register(r, Deps{Index: f.ix, Hasher: f.hasher})
		r.Register("per-candidate-healthy", func(pipeline.Params) (pipeline.Plugin, error) { return keepOnly{Healthy{}}, nil })
		r.Register("per-candidate-role", func(pipeline.Params) (pipeline.Plugin, error) { return keepOnly{RoleFilter{}}, nil })
		r.Register("per-candidate-busy", func(p pipeline.Params) (pipeline.Plugin, error) {
			b := &Busy{}
			if err := p.Decode(b); err != nil {
				return nil, err
			}
			return keepOnly{b}, nil
		})
		batch := DefaultProfile("batch", 1, 0, 0.5)
		single := DefaultProfile("single", 1, 0, 0.5)
		single.Filter = slices.Clone(single.Filter)
		for i := range single.Filter {
			single.Filter[i].Type = "per-candidate-" + single.Filter[i].Type
		}
		var decisions [2]pipeline.Decision
		var rejected [2][]pipeline.Rejection
		var errs [2]error
		for k, cfg := range []pipeline.ProfileConfig{batch, single} {
			p, err := r.Build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: toks}, f.cands, rand.New(rand.NewPCG(uint64(round), 1)))
			decisions[k], errs[k] = pipeline.NewSelector(p, nil).Select(context.Background(), rc)
			rejected[k] = slices.Clone(rc.Rejected())
		}
		if (errs[0] == nil) != (errs[1] == nil) {
			t.Fatalf("round %d: batch error %v, per-candidate error %v", round, errs[0], errs[1])
		}
		if errs[0] != nil {
			continue
		}
		if !slices.Equal(decisions[0].Order, decisions[1].Order) || decisions[0].FailedOpen != decisions[1].FailedOpen {
			t.Fatalf("round %d: batch decided %v (failed open %v), per-candidate %v (failed open %v)",
				round, decisions[0].Order, decisions[0].FailedOpen, decisions[1].Order, decisions[1].FailedOpen)
		}
		if !slices.Equal(rejected[0], rejected[1]) {
			t.Fatalf("round %d: batch rejected %v, per-candidate %v", round, rejected[0], rejected[1])
		}
	}
}

// BenchmarkKeepAll times each in-tree batch filter over 256 healthy pods,
// the filter stage's share of a decision.
func BenchmarkKeepAll(b *testing.B) {
	f := newFleet(b, 256)
	rc := pipeline.NewContext(&pipeline.Request{}, f.cands, nil)
	in := make([]int, len(f.cands))
	for i := range in {
		in[i] = i
	}
	out := make([]int, 0, len(in))
	for _, flt := range []pipeline.BatchFilter{Healthy{}, RoleFilter{}, &Concurrency{MaxRequests: 8}, &Busy{Threshold: 0.9}} {
		b.Run(flt.Type(), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if out = flt.KeepAll(rc, in, out[:0]); len(out) != len(in) {
					b.Fatalf("%s kept %d of %d", flt.Type(), len(out), len(in))
				}
			}
		})
	}
}
