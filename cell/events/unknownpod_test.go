package events

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRefuseUnknownPods checks that with RefuseUnknownPods a batch naming
// a pod that is neither configured nor a configured pod's address is
// dropped before any state is made for it (no holder, no registry entry, no
// index slot), while a configured pod, by id or by address, is applied.
func TestRefuseUnknownPods(t *testing.T) {
	for _, refuse := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.RefuseUnknownPods = refuse
		cfg.Pods = []PodSpec{{ID: "pod-a", Address: "10.0.0.1:8000"}}
		var drops []Drop
		cfg.OnDrop = func(d Drop) { drops = append(drops, d) }
		reg, err := NewRegistry(cfg, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		a, err := NewApplier(cfg, newTestIndex(t), reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		for _, name := range []string{"pod-a", "10.0.0.1:8000"} {
			b := &Batch{Pod: name, DPRank: -1, Seq: 0, Events: []Event{stored(nil, toks(1, 16), 16, 0)}}
			if name != "pod-a" {
				b.Seq = 1
			}
			if err := a.ApplyBatch(ctx, b); err != nil {
				t.Fatalf("refuse=%v: configured pod by %q: got %v, want applied", refuse, name, err)
			}
		}
		err = a.ApplyBatch(ctx, &Batch{Pod: "ghost", DPRank: -1, Events: []Event{stored(nil, toks(1, 16), 16, 0)}})
		pods := map[string]bool{}
		for _, p := range reg.Snapshot() {
			pods[p.ID] = true
		}
		if !refuse {
			if err != nil || !pods["ghost"] || !a.Admits("ghost") {
				t.Errorf("refuse=false: got %v, pods %v, Admits %v; want ghost discovered", err, pods, a.Admits("ghost"))
			}
			continue
		}
		if !errors.Is(err, ErrUnknownPod) {
			t.Fatalf("got %v, want ErrUnknownPod", err)
		}
		if r, ok := ReasonOf(err); !ok || r != ReasonUnknownPod || r.String() != "unknown_pod" {
			t.Errorf("got reason %v %v, want unknown_pod", r, ok)
		}
		if got := a.Counters().BatchesDropped[ReasonUnknownPod].Load(); got != 1 {
			t.Errorf("got %d unknown_pod drops, want 1", got)
		}
		if pods["ghost"] || len(pods) != 1 || a.TrackedBlocks("ghost") != 0 {
			t.Errorf("got pods %v, want only pod-a (no phantom pod)", pods)
		}
		if len(drops) != 1 || drops[0].Reason != ReasonUnknownPod || drops[0].Pod != "ghost" {
			t.Errorf("got OnDrop calls %+v, want one unknown_pod for ghost", drops)
		}
		if a.Admits("ghost") || !a.Admits("pod-a") || !a.Admits("10.0.0.1:8000") {
			t.Errorf("Admits: ghost %v pod-a %v address %v, want false true true", a.Admits("ghost"), a.Admits("pod-a"), a.Admits("10.0.0.1:8000"))
		}
		if id, ok := a.PodID("10.0.0.1:8000"); id != "pod-a" || !ok {
			t.Errorf("PodID(address) = %q %v, want pod-a true", id, ok)
		}
	}
}
