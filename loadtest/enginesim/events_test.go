package enginesim

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/events/zmqsub"
	"github.com/cellrouter/cellrouter/cell/index"
)

// countingSink is the cell's applier, counting the events it applied.
type countingSink struct {
	*events.Applier
	stored, removed atomic.Int64
}

// ApplyBatch applies b and counts its events when it was applied.
func (s *countingSink) ApplyBatch(ctx context.Context, b *events.Batch) error {
	err := s.Applier.ApplyBatch(ctx, b)
	if err == nil {
		for _, ev := range b.Events {
			switch ev.Kind {
			case events.KindBlockStored:
				s.stored.Add(int64(len(ev.BlockHashes)))
			case events.KindBlockRemoved:
				s.removed.Add(int64(len(ev.BlockHashes)))
			}
		}
	}
	return err
}

// TestEventsRebuildCacheInIndex runs a fleet with small caches against a
// real cell ingest path (zmqsub subscriber, applier, index) over loopback
// ZMQ, in both payload forms and with a lost batch that only a replay
// repairs, and checks that the index ends up holding, for each pod,
// exactly the blocks of the pod's cache.
func TestEventsRebuildCacheInIndex(t *testing.T) {
	cases := []struct {
		name string
		form vllmwire.Form
	}{
		{"array", vllmwire.FormArray},
		{"map", vllmwire.FormMap | vllmwire.FormTrimNils},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fc := DefaultFleetConfig()
			fc.Pods = 2
			fc.Pod = testConfig()
			fc.Pod.Blocks = 8
			fc.Pod.Events = DefaultConfig().Events
			fc.Pod.Events.Form = tc.form
			fc.Pod.Events.Skip = func(seq uint64) bool { return seq == 2 } // lost on the wire
			fleet, err := StartFleet(fc)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = fleet.Close() })

			ix, err := index.New(index.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(ix.Close)
			a, err := events.NewApplier(events.DefaultConfig(), ix, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink := &countingSink{Applier: a}
			zc := zmqsub.DefaultConfig()
			zc.Logger = quiet
			for _, p := range fleet.Pods() {
				zc.Endpoints = append(zc.Endpoints, zmqsub.Endpoint{Pub: p.ZMQEndpoint(), Replay: p.ReplayEndpoint(), Pod: p.ID(), Model: p.Model()})
			}
			sub, err := zmqsub.New(zc, sink)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				_ = sub.Run(ctx)
			}()
			t.Cleanup(func() { cancel(); <-done })
			<-sub.Ready()
			for _, p := range fleet.Pods() {
				waitFor(t, func() string { return p.ID() + " has no subscriber" }, p.EventsSubscribed)
			}

			// Prompts of 3 to 5 blocks, some extending earlier ones, on
			// caches of 8 blocks: stores, hits and evictions, from four
			// concurrent clients, so admissions of one pod interleave.
			var wg sync.WaitGroup
			failures := make(chan string, 64)
			for c := range 4 {
				wg.Go(func() {
					for j := range 8 {
						i := c*8 + j
						base, n := i%5, 16*(3+i%3)
						body, _ := json.Marshal(map[string]any{"prompt": tokens(base, n+3), "max_tokens": 1})
						if r := postNoFatal(context.Background(), fleet.Pod(i%2), string(body)); r.status != http.StatusOK {
							failures <- fmt.Sprintf("request %d: status %d: %s", i, r.status, r.body)
						}
					}
				})
			}
			wg.Wait()
			close(failures)
			for f := range failures {
				t.Error(f)
			}
			for _, p := range fleet.Pods() {
				want := p.CachedBlocks()
				slices.Sort(want)
				if len(want) == 0 {
					t.Fatalf("pod %s: cache is empty after the workload", p.ID())
				}
				var got []index.BlockHash
				waitFor(t, func() string {
					return fmt.Sprintf("pod %s: index holds %d blocks %x, cache %d blocks %x", p.ID(), len(got), got, len(want), want)
				}, func() bool {
					got = holdings(ix, p.ID())
					return slices.Equal(got, want)
				})
			}
			if sink.removed.Load() == 0 || sink.stored.Load() == 0 {
				t.Errorf("got %d stored and %d removed blocks applied, want both > 0", sink.stored.Load(), sink.removed.Load())
			}
			if sub.Counters().BatchesReplayed.Load() == 0 {
				t.Errorf("got no replayed batch, want the lost batch 2 replayed")
			}
		})
	}
}

// holdings returns the sorted blocks the index says pod holds.
func holdings(ix *index.Index, pod string) []index.BlockHash {
	var out []index.BlockHash
	for _, e := range ix.Dump() {
		e.Holders.ForEach(func(s index.Slot) {
			if ix.PodID(s) == pod {
				out = append(out, e.Hash)
			}
		})
	}
	slices.Sort(out)
	return out
}
