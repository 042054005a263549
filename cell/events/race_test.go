package events

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
)

// TestApplierConcurrentPods feeds several pods from their own goroutines
// while others read the index and the registry and kill and revive a
// victim pod; each pod's result must equal the reference applied alone.
func TestApplierConcurrentPods(t *testing.T) {
	const pods = 4
	ix := newTestIndex(t)
	cfg := DefaultConfig()
	reg, err := NewRegistry(cfg, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewApplier(cfg, ix, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := make([][]*Batch, pods)
	for p := range logs {
		rng := rand.New(rand.NewPCG(uint64(p), 11))
		e := newEngineSim(rng, fmt.Sprintf("pod-%d", p), -1, "m", 16)
		logs[p] = deliveries(rng, e.batches(300))
	}
	victim := newEngineSim(rand.New(rand.NewPCG(77, 1)), "victim", -1, "m", 16).batches(300)

	ctx := context.Background()
	var wg sync.WaitGroup
	done := make(chan struct{})
	for p := range logs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, b := range logs[p] {
				_ = a.ApplyBatch(ctx, b)
			}
		}()
	}
	var aux sync.WaitGroup
	aux.Add(2)
	go func() { // the victim's feed and its killer
		defer aux.Done()
		for i, b := range victim {
			_ = a.ApplyBatch(ctx, b)
			if i%20 == 0 {
				a.Kill("victim")
			}
		}
	}()
	go func() { // readers
		defer aux.Done()
		var r index.MatchResult
		chain := routerChain("m", 16, toks(0, 64))
		for {
			select {
			case <-done:
				return
			default:
			}
			ix.Match(chain, &r)
			_ = reg.Snapshot()
			_ = a.Counters().Batches.Load()
		}
	}()
	wg.Wait()
	close(done)
	aux.Wait()
	a.Kill("victim")
	ix.WaitSweeps()

	ref := newRefModel(16, cfg.MaxBlocksPerPod)
	for _, l := range logs {
		for _, b := range l {
			ref.apply(b)
		}
	}
	compareIndex(t, ix, ref.expected(t, ix), "after concurrent feeds")
}
