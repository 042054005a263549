package events

import (
	"testing"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

func TestPodAliases(t *testing.T) {
	pods := []PodSpec{
		{ID: "pod-0", Address: "10.0.0.7:8000"},
		{ID: "pod-1", Address: "10.0.0.8:8000"},
		{ID: "pod-2", Address: "10.0.0.8:8000"}, // shared: no alias
		{ID: "10.0.0.9:8000", Address: "10.0.0.9:8000"},
		{ID: "pod-4", Address: "10.0.0.9:8000"}, // another pod's id: no alias
		{ID: "pod-5"},
	}
	got := podAliases(pods)
	want := map[string]string{"10.0.0.7:8000": "pod-0"}
	if len(got) != len(want) || got["10.0.0.7:8000"] != "pod-0" {
		t.Errorf("got %v, want %v", got, want)
	}
}

// TestApplierPodIdentity checks that a publisher naming a configured pod by
// address feeds that pod, and that a configured model wins over the model
// the batch names.
func TestApplierPodIdentity(t *testing.T) {
	const bs = 4
	tokens := toks(1, 2*bs)
	chainOf := func(model string) []blockhash.Hash {
		return blockhash.Hasher{BlockSize: bs}.Chain(blockhash.Seed(blockhash.Identity(model, "", "")), tokens, nil)
	}
	tests := []struct {
		name       string
		pods       []PodSpec
		defModel   string
		batchPod   string
		batchModel string
		wantHolder string
		wantModel  string
	}{
		{"address names the configured pod", []PodSpec{{ID: "pod-0", Address: "10.0.0.7:8000"}}, "", "10.0.0.7:8000", "m", "pod-0", "m"},
		{"id names the pod", []PodSpec{{ID: "pod-0", Address: "10.0.0.7:8000"}}, "", "pod-0", "m", "pod-0", "m"},
		{"unknown publisher is discovered", []PodSpec{{ID: "pod-0", Address: "10.0.0.7:8000"}}, "", "10.0.0.8:8000", "m", "10.0.0.8:8000", "m"},
		{"configured model wins over the topic's", []PodSpec{{ID: "pod-0", Model: "served"}}, "", "pod-0", "engine/path", "pod-0", "served"},
		{"batch model wins over the default", nil, "def", "p", "m", "p", "m"},
		{"default when nobody names one", nil, "def", "p", "", "p", "def"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := newTestIndex(t)
			cfg := DefaultConfig()
			cfg.BlockSize, cfg.Pods, cfg.DefaultModel = bs, tt.pods, tt.defModel
			a, err := NewApplier(cfg, ix, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			b := &Batch{Pod: tt.batchPod, Model: tt.batchModel, DPRank: -1, Events: []Event{stored(nil, tokens, bs, 0)}}
			if err := apply(t, a, b); err != nil {
				t.Fatal(err)
			}
			if got := depth(t, ix, tt.wantHolder, chainOf(tt.wantModel)); got != 2 {
				t.Errorf("holder %s, model %s: got depth %d, want 2", tt.wantHolder, tt.wantModel, got)
			}
		})
	}
}

func TestApplierResetHolder(t *testing.T) {
	const bs = 4
	ix := newTestIndex(t)
	cfg := DefaultConfig()
	cfg.BlockSize, cfg.Pods = bs, []PodSpec{{ID: "pod-0", Address: "10.0.0.7:8000"}}
	a, err := NewApplier(cfg, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens := toks(1, 2*bs)
	for seq := uint64(0); seq < 3; seq++ {
		b := &Batch{Pod: "10.0.0.7:8000", DPRank: -1, Seq: seq, Events: []Event{stored(nil, tokens, bs, 0)}}
		if err := apply(t, a, b); err != nil {
			t.Fatal(err)
		}
	}
	chain := blockhash.Hasher{BlockSize: bs}.Chain(blockhash.Seed(blockhash.Identity("", "", "")), tokens, nil)
	if got := depth(t, ix, "pod-0", chain); got != 2 {
		t.Fatalf("got depth %d before the reset, want 2", got)
	}
	if a.ResetHolder("nobody", -1) {
		t.Error("ResetHolder of an unknown pod reported true")
	}
	if !a.ResetHolder("10.0.0.7:8000", -1) { // by address, as the engine names itself
		t.Fatal("ResetHolder reported false")
	}
	if got := depth(t, ix, "pod-0", chain); got != 0 {
		t.Errorf("got depth %d after the reset, want 0", got)
	}
	// The next batch, seq 0 again (a replay from the start), is a baseline.
	if err := apply(t, a, &Batch{Pod: "pod-0", DPRank: -1, Seq: 0, Events: []Event{stored(nil, tokens, bs, 0)}}); err != nil {
		t.Fatalf("seq 0 after the reset: %v", err)
	}
	if got := depth(t, ix, "pod-0", chain); got != 2 {
		t.Errorf("got depth %d after the replay, want 2", got)
	}
}
