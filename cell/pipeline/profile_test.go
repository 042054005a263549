package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// Fake plug-ins declaring arbitrary slots, for the validation rules.
var (
	slotA = NewSlot[int]("test-a")
	slotB = NewSlot[string]("test-b")
)

type fakePlugin struct {
	typ           string
	reads, writes []SlotRef
	requires      []string
}

func (f *fakePlugin) Type() string       { return f.typ }
func (f *fakePlugin) Reads() []SlotRef   { return f.reads }
func (f *fakePlugin) Writes() []SlotRef  { return f.writes }
func (f *fakePlugin) Requires() []string { return f.requires }

type fakePrep struct{ fakePlugin }

func (f *fakePrep) Prepare(context.Context, *Context) error { return nil }

type fakeScorer struct{ fakePlugin }

func (f *fakeScorer) Score(*Context, []float64) {}

type fakePicker struct{ fakePlugin }

func (f *fakePicker) Pick(_ *Context, scores []float64, order []int) []int {
	for k := range scores {
		order = append(order, k)
	}
	return order
}

func testRegistry() *Registry {
	r := NewRegistry()
	r.Register("write-a", func(Params) (Plugin, error) {
		return &fakePrep{fakePlugin{typ: "write-a", writes: Refs(slotA.Ref())}}, nil
	})
	r.Register("write-a-again", func(Params) (Plugin, error) {
		return &fakePrep{fakePlugin{typ: "write-a-again", writes: Refs(slotA.Ref())}}, nil
	})
	r.Register("read-a-write-b", func(Params) (Plugin, error) {
		return &fakePrep{fakePlugin{typ: "read-a-write-b", reads: Refs(slotA.Ref()), writes: Refs(slotB.Ref())}}, nil
	})
	r.Register("needs-write-a", func(Params) (Plugin, error) {
		return &fakePrep{fakePlugin{typ: "needs-write-a", requires: []string{"write-a"}}}, nil
	})
	r.Register("cyc-1", func(Params) (Plugin, error) {
		return &fakePrep{fakePlugin{typ: "cyc-1", requires: []string{"cyc-2"}}}, nil
	})
	r.Register("cyc-2", func(Params) (Plugin, error) {
		return &fakePrep{fakePlugin{typ: "cyc-2", requires: []string{"cyc-1"}}}, nil
	})
	r.Register("score-b", func(Params) (Plugin, error) {
		return &fakeScorer{fakePlugin{typ: "score-b", reads: Refs(slotB.Ref())}}, nil
	})
	r.Register("pick", func(Params) (Plugin, error) { return &fakePicker{fakePlugin{typ: "pick"}}, nil })
	r.Register("read-prefill", func(Params) (Plugin, error) {
		return &fakeScorer{fakePlugin{typ: "read-prefill", reads: Refs(PrefillPick.Ref())}}, nil
	})
	return r
}

func TestProfileValidation(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		rule string // substring of the error; "" means valid
		plug string // the plug-in the error must name
		slot string // the slot the error must name
	}{
		{name: "valid", yaml: "{name: p, prepare: [write-a, read-a-write-b], score: [score-b], pick: pick}"},
		{name: "read without writer", yaml: "{name: p, prepare: [read-a-write-b], pick: pick}",
			rule: "no earlier plug-in writes it", plug: "read-a-write-b", slot: "test-a"},
		{name: "read before writer", yaml: "{name: p, prepare: [read-a-write-b, write-a], pick: pick}",
			rule: "no earlier plug-in", plug: "read-a-write-b", slot: "test-a"},
		{name: "two writers", yaml: "{name: p, prepare: [write-a, write-a-again], pick: pick}",
			rule: "written by two plug-ins", plug: "write-a-again", slot: "test-a"},
		{name: "missing dependency", yaml: "{name: p, prepare: [needs-write-a], pick: pick}",
			rule: "which the profile lacks", plug: "needs-write-a"},
		{name: "dependency after", yaml: "{name: p, prepare: [needs-write-a, write-a], pick: pick}",
			rule: "runs after it", plug: "needs-write-a"},
		{name: "cycle", yaml: "{name: p, prepare: [cyc-1, cyc-2], pick: pick}",
			rule: "runs after it", plug: "cyc-1"},
		{name: "mis-ordered stage", yaml: "{name: p, prepare: [write-a], filter: [score-b], pick: pick}",
			rule: "not a filter plug-in", plug: "score-b"},
		{name: "no picker", yaml: "{name: p, prepare: [write-a]}", rule: "no picker"},
		{name: "unknown type", yaml: "{name: p, prepare: [nope], pick: pick}", rule: "unknown plug-in type", plug: "nope"},
		{name: "no name", yaml: "{prepare: [write-a], pick: pick}", rule: "needs a name"},
		{name: "negative weight", yaml: "{name: p, prepare: [write-a, read-a-write-b], score: [{type: score-b, weight: -1}], pick: pick}",
			rule: "negative", plug: "score-b"},
		{name: "prefill pick outside decode", yaml: "{name: p, score: [read-prefill], pick: pick}",
			rule: "no earlier plug-in", plug: "read-prefill", slot: "prefill-pick"},
		{name: "prefill pick in decode", yaml: "{name: p, role: decode, score: [read-prefill], pick: pick}"},
		{name: "bad role", yaml: "{name: p, role: chef, pick: pick}", rule: "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg ProfileConfig
			if err := yaml.Unmarshal([]byte(tt.yaml), &cfg); err != nil {
				t.Fatal(err)
			}
			_, err := testRegistry().Build(cfg)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Build = %v, want valid", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Build = %v, want a ValidationError", err)
			}
			if !strings.Contains(err.Error(), tt.rule) {
				t.Errorf("error %q does not say %q", err, tt.rule)
			}
			if ve.Plugin != tt.plug {
				t.Errorf("error names plug-in %q, want %q", ve.Plugin, tt.plug)
			}
			if tt.slot != "" && !strings.Contains(ve.Slot, tt.slot) {
				t.Errorf("error names slot %q, want %q", ve.Slot, tt.slot)
			}
		})
	}
}

func TestCycleDetection(t *testing.T) {
	// The ordering rule sees cycles as "runs after it"; checkCycles names them.
	a := &fakePrep{fakePlugin{typ: "a", requires: []string{"b"}}}
	b := &fakePrep{fakePlugin{typ: "b", requires: []string{"a"}}}
	err := checkCycles("p", []Plugin{a, b})
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("checkCycles = %v, want a cycle error", err)
	}
}

func TestSlotsTyped(t *testing.T) {
	rc := NewContext(&Request{}, nil, nil)
	if _, ok := slotA.Get(rc); ok {
		t.Fatal("unset slot reported set")
	}
	slotA.Set(rc, 7)
	if v, ok := slotA.Get(rc); !ok || v != 7 {
		t.Fatalf("Get = %v, %v; want 7, true", v, ok)
	}
	rc.Reset(&Request{}, nil)
	if _, ok := slotA.Get(rc); ok {
		t.Fatal("Reset kept a slot value")
	}
	// A used context reuses its boxes: setting a slice slot allocates
	// nothing, and Reset lets go of the value it held.
	buf, req := []uint32{1, 2, 3}, &Request{}
	Tokens.Set(rc, buf)
	if allocs := testing.AllocsPerRun(100, func() {
		rc.Reset(req, nil)
		Tokens.Set(rc, buf)
	}); allocs != 0 {
		t.Fatalf("setting a slot allocated %v times per decision", allocs)
	}
	rc.Reset(&Request{}, nil)
	if got := rc.values[Tokens.Ref().id].box.(*slotBox[[]uint32]).v; got != nil {
		t.Fatalf("Reset left %v in the box", got)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("declaring a slot name twice did not panic")
		}
	}()
	NewSlot[int]("test-a")
}

func TestParamsDecodeStrict(t *testing.T) {
	p, err := ParamsOf("{threshold: 0.5, typo: 1}")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Threshold float64 `yaml:"threshold"`
	}
	if err := p.Decode(&v); err == nil {
		t.Fatal("Decode accepted an unknown field")
	}
}
