package ingestbench

import (
	"context"
	"fmt"
	"math/bits"
	"slices"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/index"
)

// podEntry is one indexed block and the pods (by pod number, not slot)
// holding it.
type podEntry struct {
	hash index.BlockHash
	pods [index.MaxPods / 64]uint64
}

// referenceApply decodes every payload of w and applies it directly (no
// transport) to a fresh applier and index, pod after pod, and returns the
// index content and the applier's counters.
func referenceApply(ctx context.Context, cfg Config, w *Workload) ([]podEntry, *events.Counters, error) {
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		return nil, nil, fmt.Errorf("ingestbench: %w", err)
	}
	defer ix.Close()
	ecfg := events.DefaultConfig()
	ecfg.BlockSize = cfg.RouterBlockSize
	a, err := events.NewApplier(ecfg, ix, nil, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("ingestbench: %w", err)
	}
	var b events.Batch
	for _, ps := range w.Pods {
		for i, pl := range ps.Payloads {
			if err := vllmwire.DecodePayload(pl, &b, vllmwire.DefaultLimits()); err != nil {
				return nil, nil, fmt.Errorf("ingestbench: reference decode %s seq %d: %w", ps.ID, i, err)
			}
			b.Pod, b.Model, b.Seq = ps.ID, cfg.Model, uint64(i)
			if err := a.ApplyBatch(ctx, &b); err != nil {
				return nil, nil, fmt.Errorf("ingestbench: reference apply %s seq %d: %w", ps.ID, i, err)
			}
		}
	}
	return dumpByPod(ix, w), a.Counters(), nil
}

// dumpByPod returns ix's content sorted by hash, its holders translated
// from slots to w's pod numbers.
func dumpByPod(ix *index.Index, w *Workload) []podEntry {
	podOf := make(map[index.Slot]int, len(w.Pods))
	for p, ps := range w.Pods {
		if s, ok := ix.SlotOf(ps.ID); ok {
			podOf[s] = p
		}
	}
	dump := ix.Dump()
	out := make([]podEntry, len(dump))
	for i, e := range dump {
		out[i].hash = e.Hash
		e.Holders.ForEach(func(s index.Slot) {
			p, ok := podOf[s]
			if !ok {
				p = index.MaxPods - 1 - int(s) // a slot of no known pod: keep it visible
			}
			out[i].pods[p/64] |= 1 << (p % 64)
		})
	}
	slices.SortFunc(out, func(a, b podEntry) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	return out
}

// compareIndex returns an error describing the first difference between
// got and want, or nil.
func compareIndex(got, want []podEntry) error {
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			return fmt.Errorf("index differs from the reference at entry %d: got block %#x held by %d pods, want block %#x held by %d pods",
				i, got[i].hash, count(got[i]), want[i].hash, count(want[i]))
		}
	}
	if len(got) != len(want) {
		return fmt.Errorf("index holds %d blocks, the reference %d", len(got), len(want))
	}
	return nil
}

// count returns the number of pods holding e.
func count(e podEntry) int {
	n := 0
	for _, w := range e.pods {
		n += bits.OnesCount64(w)
	}
	return n
}
