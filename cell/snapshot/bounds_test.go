package snapshot

import (
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
)

// newBoundedState is newCellState with holders that index at most bound
// router blocks.
func newBoundedState(t testing.TB, bound int) *cellState {
	t.Helper()
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	ec := events.DefaultConfig()
	ec.BlockSize = routerBS
	ec.DefaultModel = "m"
	ec.MaxIndexBlocksPerPod = bound
	a, err := events.NewApplier(ec, ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &cellState{ix: ix, a: a}
}

// perHolder counts the blocks each pod id holds in ix.
func perHolder(t *testing.T, ix *index.Index) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range contents(t, ix) {
		for id := range m {
			out[id]++
		}
	}
	return out
}

// TestRestoreEnforcesBounds restores a snapshot taken without bounds into
// an applier whose holders may index a third of the largest one's blocks:
// no holder comes back over the bound, the index and the forests agree
// holder by holder, and the restored state goes on applying batches.
func TestRestoreEnforcesBounds(t *testing.T) {
	id := testIdentity(t)
	orig := newBoundedState(t, 1<<30)
	w := newWorkload(5, 3)
	feed(t, w, 2000, orig)
	largest := 0
	for _, n := range perHolder(t, orig.ix) {
		largest = max(largest, n)
	}
	bound := largest / 3
	if bound < 10 {
		t.Fatalf("largest holder has %d blocks: too few to test", largest)
	}
	snap, err := Decode(encode(t, orig, id), id)
	if err != nil {
		t.Fatal(err)
	}
	back := newBoundedState(t, bound)
	if _, err := snap.Restore(back.ix, back.a, time.Now()); err != nil {
		t.Fatal(err)
	}
	counts := perHolder(t, back.ix)
	evicted := uint64(0)
	for _, h := range back.a.ExportHolders() {
		got := back.a.IndexedBlocks(h.ID)
		if got > bound {
			t.Errorf("holder %s indexes %d blocks after restore, bound %d", h.ID, got, bound)
		}
		if counts[h.ID] != got {
			t.Errorf("holder %s: the index holds %d of its blocks, its forest %d", h.ID, counts[h.ID], got)
		}
	}
	for _, r := range events.EvictReasons() {
		evicted += back.a.Counters().Evicted[r].Load()
	}
	if evicted == 0 {
		t.Fatal("nothing evicted: the bound was not exercised")
	}
	// The bounded state keeps applying the same stream.
	feed(t, w, 500, back)
	for id, n := range perHolder(t, back.ix) {
		if n > bound {
			t.Errorf("holder %s holds %d blocks after continuing, bound %d", id, n, bound)
		}
	}
}
