package indexbench

import (
	"context"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// nopIndexer does nothing, so a step with it measures the harness alone.
type nopIndexer struct{}

func (nopIndexer) Apply([]index.Op)       {}
func (nopIndexer) NewMatcher() Matcher    { return nopMatcher{} }
func (nopIndexer) Blocks() int64          { return 0 }
func (nopIndexer) Close()                 {}
func (nopMatcher) Match([]blockhash.Hash) {}
func (nopMatcher) Depth(index.Slot) int   { return 0 }

type nopMatcher struct{}

var nopFactory = Factory{Name: "nop", New: func(int, int) (Indexer, error) { return nopIndexer{}, nil }}

func TestStepHarnessDoesNotAllocate(t *testing.T) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig()
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		nominal float64
	}{
		{"unpaced", 0},
		{"paced", float64(w.BlockOps()) / 0.05}, // the whole slice in 50ms
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := runStep(context.Background(), nopFactory, w, makePlan(w, tt.nominal, time.Second), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if st.DoneBlockOps != st.BlockOps || st.BlockOps != w.BlockOps() {
				t.Errorf("got %d of %d block-ops done, want all %d", st.DoneBlockOps, st.BlockOps, w.BlockOps())
			}
			if st.DoneEvents != st.Events || st.DoneQueries != int64(len(w.Chains)) {
				t.Errorf("got %d/%d events and %d queries done, want all", st.DoneEvents, st.Events, st.DoneQueries)
			}
			// Goroutine start-up and the window timer allocate a few objects;
			// the loops themselves must allocate nothing per op.
			if st.Allocs > 64 {
				t.Errorf("got %d allocations in a step with a no-op indexer, want at most 64", st.Allocs)
			}
		})
	}
}

func TestMakePlan(t *testing.T) {
	recs, err := trace.ReadFile(smallTrace, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := BuildWorkload(recs, smallConfig())
	if err != nil {
		t.Fatal(err)
	}
	total := float64(w.BlockOps())
	tests := []struct {
		name       string
		nominal    float64
		window     time.Duration
		wantWindow time.Duration
		wantAll    bool
	}{
		{"unpaced keeps everything", 0, time.Second, time.Second, true},
		{"fast rate: whole trace, shorter window", total / 0.2, time.Second, 200 * time.Millisecond, true},
		{"slow rate: a prefix of the trace", total / 10, time.Second, time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := makePlan(w, tt.nominal, tt.window)
			if d := p.window - tt.wantWindow; d > time.Millisecond || d < -time.Millisecond {
				t.Errorf("got window %v, want %v", p.window, tt.wantWindow)
			}
			if all := p.blockOps == w.BlockOps() && p.qCut == len(w.Chains); all != tt.wantAll {
				t.Errorf("got block-ops %d of %d, queries %d of %d; want everything %v", p.blockOps, w.BlockOps(), p.qCut, len(w.Chains), tt.wantAll)
			}
			if !tt.wantAll {
				// About a tenth of the trace time: the ops due within the window.
				if p.qCut == 0 || p.qCut >= len(w.Chains) {
					t.Errorf("got %d queries, want a proper prefix", p.qCut)
				}
				last := w.At[p.qCut-1]
				if due(last, p.k) > int64(p.window) {
					t.Errorf("query due at %d ns is past the window %v", due(last, p.k), p.window)
				}
			}
		})
	}
}
