package cell

import (
	"context"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// saturatedPods is a flowcontrol.Saturation that calls the named pods
// saturated at any reserve.
type saturatedPods map[string]bool

func (s saturatedPods) Saturated(pod string, _ float64) bool { return s[pod] }

// TestPlaceFlowMovesThePodWithRoomFirst: a decision whose pick is
// saturated while a later pod has room is reordered so that pod goes
// first, its score with it, and the other pods keep the pipeline's order
// as fallbacks; a pick with room, and a disaggregated plan's decode
// order alike, are handled by the same rule.
func TestPlaceFlowMovesThePodWithRoomFirst(t *testing.T) {
	cands := []pipeline.Candidate{{Target: &pipeline.Target{Pod: "a"}}, {Target: &pipeline.Target{Pod: "b"}}, {Target: &pipeline.Target{Pod: "c"}}, {Target: &pipeline.Target{Pod: "d"}}}
	for _, tc := range []struct {
		name       string
		sat        saturatedPods
		disagg     bool
		wantOrder  []int
		wantScores []float64
	}{
		{"pick has room", saturatedPods{}, false, []int{2, 0, 3, 1}, []float64{4, 3, 2, 1}},
		{"pick saturated", saturatedPods{"c": true}, false, []int{0, 2, 3, 1}, []float64{3, 4, 2, 1}},
		{"two saturated", saturatedPods{"c": true, "a": true}, false, []int{3, 2, 0, 1}, []float64{2, 4, 3, 1}},
		{"decode order", saturatedPods{"c": true}, true, []int{0, 2, 3, 1}, []float64{3, 4, 2, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec := pipeline.Decision{Order: []int{2, 0, 3, 1}, Scores: []float64{4, 3, 2, 1}}
			d := &decision{rc: &pipeline.Context{Candidates: cands}}
			if tc.disagg {
				d.plan = pipeline.Plan{Disaggregated: true, Decode: dec}
			} else {
				d.plan = pipeline.Plan{Single: dec}
			}
			ctl := flowcontrol.New(flowcontrol.DefaultConfig(), tc.sat, nil)
			g, err := ctl.Admit(context.Background(), flowcontrol.Request{Tenant: "t", Pods: podsOf(d)})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Done(0)
			placeFlow(d, g)
			got := d.plan.Single
			if tc.disagg {
				got = d.plan.Decode
			}
			if !slices.Equal(got.Order, tc.wantOrder) || !slices.Equal(got.Scores, tc.wantScores) {
				t.Errorf("order %v scores %v, want %v %v", got.Order, got.Scores, tc.wantOrder, tc.wantScores)
			}
		})
	}
}

// TestToFrontBringsInOnlyALoadFilteredPod: a follower's leader's pod goes
// first when it is in the order, or when only a load filter left it out;
// a pod a hard filter refused (unhealthy, draining, wrong role) is never
// brought in, and nothing outside the order is without withLoadFiltered.
func TestToFrontBringsInOnlyALoadFilteredPod(t *testing.T) {
	cands := []pipeline.Candidate{{Target: &pipeline.Target{Pod: "a"}}, {Target: &pipeline.Target{Pod: "b"}}, {Target: &pipeline.Target{Pod: "c"}}, {Target: &pipeline.Target{Pod: "d"}}}
	fresh := func() *decision {
		rc := pipeline.NewContext(&pipeline.Request{Model: "m"}, cands, nil)
		rc.Reject(2, "busy", "96% of KV blocks active")
		rc.Reject(3, "healthy", "not ready")
		return &decision{rc: rc, plan: pipeline.Plan{Single: pipeline.Decision{Order: []int{0, 1}, Scores: []float64{5, 4}}}}
	}
	for _, tc := range []struct {
		pod        string
		withLoad   bool
		want       bool
		wantOrder  []int
		wantScores []float64
	}{
		{"b", true, true, []int{1, 0}, []float64{4, 5}},
		{"c", true, true, []int{2, 0, 1}, []float64{5, 5, 4}},
		{"c", false, false, []int{0, 1}, []float64{5, 4}},
		{"d", true, false, []int{0, 1}, []float64{5, 4}},
		{"e", true, false, []int{0, 1}, []float64{5, 4}},
	} {
		d := fresh()
		if got := toFront(d, tc.pod, tc.withLoad); got != tc.want {
			t.Errorf("toFront(%s, %v) = %v, want %v", tc.pod, tc.withLoad, got, tc.want)
		}
		if o := d.plan.Single; !slices.Equal(o.Order, tc.wantOrder) || !slices.Equal(o.Scores, tc.wantScores) {
			t.Errorf("toFront(%s, %v): order %v scores %v, want %v %v", tc.pod, tc.withLoad, o.Order, o.Scores, tc.wantOrder, tc.wantScores)
		}
	}
}
