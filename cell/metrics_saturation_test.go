package cell

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// TestSaturationByModel checks the ratio against cases worked by hand: a
// model sums its pods, a pod serving two models (a base and its adapter)
// counts for both, pods of unknown size count for nothing, and a model of
// only such pods has no value.
func TestSaturationByModel(t *testing.T) {
	got := saturationByModel([]podCapacity{
		{models: []string{"a"}, capacity: 100, used: 40},
		{models: []string{"a", "a-lora"}, capacity: 300, used: 60},
		{models: []string{"b"}, capacity: 0, used: 500},
		{models: []string{"b"}, capacity: 50, used: 75},
		{models: []string{"c"}, capacity: 0, used: 10},
	})
	want := map[string]float64{"a": 0.25, "a-lora": 0.2, "b": 1.5}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for m, w := range want {
		if math.Abs(got[m]-w) > 1e-12 {
			t.Errorf("model %s: got %v, want %v", m, got[m], w)
		}
	}
	if len(saturationByModel(nil)) != 0 {
		t.Error("no pods: want no series")
	}
}

// TestCellExportsSaturation runs a cell with configured pods of two
// models, puts requests in flight on its load tracker, and reads the
// gauge from /metrics; a draining pod leaves its model's ratio.
func TestCellExportsSaturation(t *testing.T) {
	cfg := testConfig()
	cfg.Pods = []PodConfig{
		{ID: "p1", Model: "m-a", KVBlocks: 100},
		{ID: "p2", Model: "m-a", KVBlocks: 300},
		{ID: "p3", Model: "m-b", KVBlocks: 50},
		{ID: "p4", Model: "m-b"}, // unknown size: left out
	}
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	tk1 := c.router.tracker.Start("p1", 40, 0, "")
	defer c.router.tracker.Done(tk1)
	tk3 := c.router.tracker.Start("p3", 10, 0, "")
	defer c.router.tracker.Done(tk3)
	tk4 := c.router.tracker.Start("p4", 1000, 0, "")
	defer c.router.tracker.Done(tk4)

	line := func(model string, v float64) string {
		return fmt.Sprintf(`cellrouter_cell_saturation{cell=%q,model=%q} %g`, cfg.CellID, model, v)
	}
	_, body := get(t, base+"/metrics")
	for _, want := range []string{line("m-a", 0.1), line("m-b", 0.2)} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	c.state.setDraining("p2", true)
	_, body = get(t, base+"/metrics")
	if want := line("m-a", 0.4); !strings.Contains(body, want+"\n") {
		t.Errorf("with p2 draining, /metrics lacks %q", want)
	}
}
