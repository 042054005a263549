package pipeline

import (
	"context"
	"testing"
)

// indexScorer scores candidate k of the active list as (k+1)*mult.
type indexScorer struct {
	fakePlugin
	mult float64
}

func (s *indexScorer) Score(rc *Context, out []float64) {
	for k := range out {
		out[k] = float64(k+1) * s.mult
	}
}

// TestSelectorWeightsScores checks the Score stage's weighted sum, with one
// scorer (which writes the total itself) and with two, at weights other
// than 1.
func TestSelectorWeightsScores(t *testing.T) {
	r := testRegistry()
	r.Register("by-index", func(Params) (Plugin, error) { return &indexScorer{fakePlugin{typ: "by-index"}, 1}, nil })
	r.Register("by-index-10", func(Params) (Plugin, error) { return &indexScorer{fakePlugin{typ: "by-index-10"}, 10}, nil })
	cands := make([]Candidate, 3)
	for i := range cands {
		cands[i].Healthy = true
	}
	for _, tt := range []struct {
		name   string
		scores []PluginSpec
		want   []float64
	}{
		{"one scorer at weight 2", []PluginSpec{{Type: "by-index", Weight: 2}}, []float64{2, 4, 6}},
		{"two scorers", []PluginSpec{{Type: "by-index", Weight: 2}, {Type: "by-index-10", Weight: 0.5}}, []float64{7, 14, 21}},
	} {
		p, err := r.Build(ProfileConfig{Name: tt.name, Score: tt.scores, Pick: PluginSpec{Type: "pick"}})
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewSelector(p, nil).Select(context.Background(), NewContext(&Request{}, cands, nil))
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range tt.want {
			if d.Order[i] != i || d.Scores[i] != want {
				t.Fatalf("%s: order %v scores %v, want scores %v", tt.name, d.Order, d.Scores, tt.want)
			}
		}
	}
}
