package plugins

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// explainProfile is the default profile with a second scorer, so that the
// explanation has two raw scores and weights to check.
func explainProfile() pipeline.ProfileConfig {
	p := DefaultProfile("explained", 1, 0, 0.9)
	p.Score = append(p.Score, pipeline.PluginSpec{Type: "least-load", Weight: 0.5})
	return p
}

// explainFleet is six pods in a hand-built state: pod 1 holds 8 blocks of
// the request, pod 2 holds 4, pod 3 is dead, pod 4 is busy (990 of 1000
// blocks active), pod 5 is draining.
func explainFleet(t testing.TB) (*fleet, []uint32) {
	f := newFleet(t, 6)
	toks := tokens(16*16, 7)
	f.hold(1, toks, 8)
	f.hold(2, toks, 4)
	f.cands[0].ActiveBlocks = 30
	f.cands[2].ActiveBlocks = 2
	f.cands[3].Healthy = false
	f.cands[4].ActiveBlocks = 990
	f.cands[5].Draining = true
	return f, toks
}

// TestExplainRecordsTheDecision checks the recorded explanation against
// the decision itself and against a reference computed by hand: the order
// and pick are the decision's, each filtered pod names its filter and
// reason, the raw scores are what the scorers compute (kv-cost's cost,
// least-load's normalised load), and the weighted sum of the raw scores is
// the total the picker saw.
func TestExplainRecordsTheDecision(t *testing.T) {
	f, toks := explainFleet(t)
	s := f.selector(t, explainProfile(), nil)
	rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: toks}, f.cands, rand.New(rand.NewPCG(1, 2)))
	rc.SetExplain(true)
	d, err := s.Select(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	x := rc.Explained()
	if x == nil || len(x.Passes) != 1 {
		t.Fatalf("Explained: got %+v, want one pass", x)
	}
	ps := x.Passes[0]
	if !slices.Equal(ps.Order, d.Order) || ps.Order[0] != d.Pick() {
		t.Errorf("order: got %v, want the decision's %v", ps.Order, d.Order)
	}
	if d.Pick() != 1 {
		t.Errorf("pick: got pod %d, want pod 1 (8 blocks held, idle)", d.Pick())
	}
	wantRejected := map[int]pipeline.Rejection{
		3: {Candidate: 3, Filter: "healthy", Reason: "not healthy"},
		5: {Candidate: 5, Filter: "healthy", Reason: "draining"},
		4: {Candidate: 4, Filter: "busy", Reason: "99% of KV blocks active (threshold 90%)"},
	}
	if len(ps.Rejected) != len(wantRejected) {
		t.Errorf("rejected: got %+v, want %d", ps.Rejected, len(wantRejected))
	}
	for _, rj := range ps.Rejected {
		if w, ok := wantRejected[rj.Candidate]; !ok || rj != w {
			t.Errorf("rejection: got %+v, want %+v", rj, w)
		}
	}
	if !slices.Equal(ps.Active, []int{0, 1, 2}) {
		t.Errorf("active: got %v, want [0 1 2]", ps.Active)
	}
	if want := []pipeline.ScorerWeight{{Type: "kv-cost", Weight: 1}, {Type: "least-load", Weight: 0.5}}; !slices.Equal(ps.Scorers, want) {
		t.Errorf("scorers: got %+v, want %+v", ps.Scorers, want)
	}
	// The reference: kv-cost = -(overlap*(16-matched) + active blocks);
	// least-load normalises -active blocks over the active pods to [0, 1].
	matched := []int{0, 8, 4}
	active := []int{30, 0, 2}
	for k := range ps.Active {
		if want := -float64(16-matched[k]) - float64(active[k]); ps.Raw[0][k] != want {
			t.Errorf("kv-cost of pod %d: got %v, want %v", k, ps.Raw[0][k], want)
		}
		if want := 1 - float64(active[k])/30; math.Abs(ps.Raw[1][k]-want) > 1e-9 {
			t.Errorf("least-load of pod %d: got %v, want %v", k, ps.Raw[1][k], want)
		}
		if sum := ps.Raw[0][k] + 0.5*ps.Raw[1][k]; math.Abs(sum-ps.Total[k]) > 1e-9 {
			t.Errorf("total of pod %d: got %v, want the weighted raw scores' %v", k, ps.Total[k], sum)
		}
	}
	for i, c := range d.Order {
		k := slices.Index(ps.Active, c)
		if ps.Total[k] != d.Scores[i] {
			t.Errorf("score of ranked pod %d: explanation %v, decision %v", c, ps.Total[k], d.Scores[i])
		}
	}
}

// TestExplainOffChangesNothing checks that decisions with and without the
// explanation are the same, that nothing is recorded while it is off, and
// that Reset turns it off.
func TestExplainOffChangesNothing(t *testing.T) {
	f, toks := explainFleet(t)
	s := f.selector(t, explainProfile(), nil)
	for seed := uint64(0); seed < 20; seed++ {
		req := &pipeline.Request{Model: "m", TokenIDs: toks}
		off := pipeline.NewContext(req, f.cands, rand.New(rand.NewPCG(seed, 0)))
		on := pipeline.NewContext(req, f.cands, rand.New(rand.NewPCG(seed, 0)))
		on.SetExplain(true)
		d1, err1 := s.Select(context.Background(), off)
		d2, err2 := s.Select(context.Background(), on)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !slices.Equal(d1.Order, d2.Order) || !slices.Equal(d1.Scores, d2.Scores) || d1.FailedOpen != d2.FailedOpen {
			t.Fatalf("seed %d: explained decision %+v differs from %+v", seed, d2, d1)
		}
		if off.Explained() != nil {
			t.Fatalf("seed %d: a decision not explained recorded %+v", seed, off.Explained())
		}
		on.Reset(req, f.cands)
		if on.Explained() != nil {
			t.Fatal("Reset left explaining on")
		}
	}
}

// TestExplainFailedOpen checks a pass where every pod is busy: the soft
// busy filter's verdicts are kept apart, the hard filters' stand, and the
// pass says it failed open.
func TestExplainFailedOpen(t *testing.T) {
	f := newFleet(t, 3)
	for i := range f.cands {
		f.cands[i].ActiveBlocks = 950 + i
	}
	f.cands[2].Healthy = false
	s := f.selector(t, DefaultProfile("default", 1, 0, 0.9), nil)
	rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: tokens(64, 3)}, f.cands, rand.New(rand.NewPCG(1, 2)))
	rc.SetExplain(true)
	d, err := s.Select(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	ps := rc.Explained().Passes[0]
	if !d.FailedOpen || !ps.FailedOpen {
		t.Fatalf("failed open: decision %v, explanation %v, want both", d.FailedOpen, ps.FailedOpen)
	}
	if len(ps.Rejected) != 1 || ps.Rejected[0].Candidate != 2 || ps.Rejected[0].Filter != "healthy" {
		t.Errorf("rejected: got %+v, want pod 2 by healthy", ps.Rejected)
	}
	busy := 0
	for _, rj := range ps.SoftRejected {
		if rj.Filter == "busy" {
			busy++
		}
	}
	if busy != 2 {
		t.Errorf("soft rejections: got %+v, want pods 0 and 1 by busy", ps.SoftRejected)
	}
	if !slices.Equal(ps.Order, d.Order) {
		t.Errorf("order: got %v, want %v", ps.Order, d.Order)
	}
}

// BenchmarkDecisionExplained is BenchmarkDecision with the explanation
// recorded: what explaining costs a decision (BenchmarkDecision is the
// cost with it off).
func BenchmarkDecisionExplained(b *testing.B) {
	f, reqs, s := decisionBench(b)
	rc := pipeline.NewContext(nil, f.cands, rand.New(rand.NewPCG(1, 2)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := pipeline.Request{Model: "m", TokenIDs: reqs[i%len(reqs)]}
		rc.Reset(&req, f.cands)
		rc.SetExplain(true)
		if _, err := s.Select(context.Background(), rc); err != nil {
			b.Fatal(err)
		}
	}
}

// TestExplainDisaggregated checks a prefill-then-decode plan: one pass per
// selector, each with its phase and the order its decision took, and the
// role filter naming the pods of the other phase.
func TestExplainDisaggregated(t *testing.T) {
	f := newFleet(t, 4)
	f.cands[0].Role, f.cands[1].Role = pipeline.RolePrefill, pipeline.RolePrefill
	f.cands[2].Role, f.cands[3].Role = pipeline.RoleDecode, pipeline.RoleDecode
	pre, dec := DefaultProfile("pre", 1, 0, 0.9), DefaultProfile("dec", 1, 0, 0.9)
	pre.Role, dec.Role = "prefill", "decode"
	w, err := pipeline.NewDisaggregatedWorkflow(f.selector(t, pre, nil), f.selector(t, dec, nil))
	if err != nil {
		t.Fatal(err)
	}
	rc := pipeline.NewContext(&pipeline.Request{Model: "m", TokenIDs: tokens(64, 4)}, f.cands, rand.New(rand.NewPCG(3, 4)))
	rc.SetExplain(true)
	plan, err := w.Plan(context.Background(), rc)
	if err != nil {
		t.Fatal(err)
	}
	x := rc.Explained()
	if len(x.Passes) != 2 {
		t.Fatalf("passes: got %d, want 2", len(x.Passes))
	}
	for i, want := range []struct {
		phase pipeline.Role
		dec   pipeline.Decision
		other []int
	}{{pipeline.RolePrefill, plan.Prefill, []int{2, 3}}, {pipeline.RoleDecode, plan.Decode, []int{0, 1}}} {
		ps := x.Passes[i]
		if ps.Phase != want.phase || !slices.Equal(ps.Order, want.dec.Order) {
			t.Errorf("pass %d: phase %s order %v, want %s %v", i, ps.Phase, ps.Order, want.phase, want.dec.Order)
		}
		var dropped []int
		for _, rj := range ps.Rejected {
			if rj.Filter == "role" {
				dropped = append(dropped, rj.Candidate)
			}
		}
		if !slices.Equal(dropped, want.other) {
			t.Errorf("pass %d: role filter dropped %v, want %v", i, dropped, want.other)
		}
	}
}
