package eventgen

import (
	"context"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// TestEventsRebuildEngineState applies the generated events to a real
// applier and index and checks that each pod then holds exactly what its
// engine model holds.
func TestEventsRebuildEngineState(t *testing.T) {
	recs, err := trace.ReadFile("../../testdata/mooncake_small.jsonl", 200)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Pods, cfg.BlocksPerPod = 4, 2048
	batches, err := Generate(cfg, recs)
	if err != nil {
		t.Fatal(err)
	}
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	ecfg := events.DefaultConfig()
	ecfg.BlockSize = cfg.BlockSize
	a, err := events.NewApplier(ecfg, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	removes := 0
	for i := range batches {
		for _, ev := range batches[i].Events {
			if ev.Kind == events.KindBlockRemoved {
				removes++
			}
		}
		if err := a.ApplyBatch(context.Background(), &batches[i]); err != nil {
			t.Fatalf("batch %d (%s seq %d): %v", i, batches[i].Pod, batches[i].Seq, err)
		}
	}
	if removes == 0 {
		t.Fatal("no evictions: the test does not exercise removal; shrink BlocksPerPod")
	}
	// Rebuild the engine models and compare block sets per pod.
	want := map[string]map[uint64]bool{}
	for i := range batches {
		b := &batches[i]
		if want[b.Pod] == nil {
			want[b.Pod] = map[uint64]bool{}
		}
		for _, ev := range b.Events {
			for _, h := range ev.BlockHashes {
				want[b.Pod][h] = ev.Kind == events.KindBlockStored
			}
		}
	}
	got := map[string]map[uint64]bool{}
	for _, e := range ix.Dump() {
		e.Holders.ForEach(func(s index.Slot) {
			pod := ix.PodID(s)
			if got[pod] == nil {
				got[pod] = map[uint64]bool{}
			}
			got[pod][uint64(e.Hash)] = true
		})
	}
	for pod, blocks := range want {
		n := 0
		for h, held := range blocks {
			if !held {
				continue
			}
			n++
			if !got[pod][h] {
				t.Fatalf("pod %s: block %x stored by the engine is not indexed", pod, h)
			}
		}
		if len(got[pod]) != n {
			t.Fatalf("pod %s: index holds %d blocks, engine %d", pod, len(got[pod]), n)
		}
	}
}
