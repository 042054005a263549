package cell

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUnknownParentWarnsOnceWithHint feeds a real applier a BlockStored
// whose parent the cell never saw (a stream joined mid-way) and checks that
// the cell says so once per pod, with a hint, like every other drop reason.
func TestUnknownParentWarnsOnceWithHint(t *testing.T) {
	logs := &syncBuffer{}
	w := newUnindexedWarner(slog.New(slog.NewTextHandler(logs, nil)))
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	cfg := events.DefaultConfig()
	cfg.OnDrop = w.onDrop
	a, err := events.NewApplier(cfg, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	orphan := func(pod string, seq uint64) *events.Batch {
		toks := make([]uint32, 16)
		for i := range toks {
			toks[i] = uint32(seq*100 + uint64(i))
		}
		return &events.Batch{Pod: pod, DPRank: -1, Seq: seq, Events: []events.Event{{
			Kind: events.KindBlockStored, BlockSize: 16, TokenIDs: toks,
			BlockHashes: []uint64{1000 + seq}, ParentHash: 424242 + seq, HasParent: true,
		}}}
	}
	for seq := uint64(1); seq <= 3; seq++ {
		if err := a.ApplyBatch(context.Background(), orphan("pod-a", seq)); err != nil {
			t.Fatalf("batch %d: got error %v, want the batch applied with its orphan event dropped", seq, err)
		}
	}
	if got := a.Counters().EventsDropped[events.ReasonUnknownParent].Load(); got != 3 {
		t.Fatalf("got %d unknown_parent drops counted, want 3", got)
	}
	out := logs.String()
	if got := strings.Count(out, "reason=unknown_parent"); got != 1 {
		t.Fatalf("got %d unknown_parent warnings for pod-a, want 1 (once per pod):\n%s", got, out)
	}
	if !strings.Contains(out, "pod=pod-a") || !strings.Contains(out, "mid-way") {
		t.Errorf("got warning %q, want the pod named and the mid-way hint", out)
	}
	if err := a.ApplyBatch(context.Background(), orphan("pod-b", 1)); err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(logs.String(), "reason=unknown_parent"); got != 2 {
		t.Errorf("got %d unknown_parent warnings after a second pod, want 2", got)
	}
}

// TestEveryWarnedDropHasHint checks that each drop reason the applier tells
// OnDrop about has a hint, so no warning leaves the operator guessing.
func TestEveryWarnedDropHasHint(t *testing.T) {
	routine := map[events.DropReason]bool{events.ReasonDuplicate: true, events.ReasonGap: true,
		events.ReasonOtherGroup: true, events.ReasonNoSlot: true}
	for _, r := range events.DropReasons() {
		if !routine[r] && dropHints[r] == "" {
			t.Errorf("drop reason %v has no hint in dropHints", r)
		}
	}
}
