package zmqsub

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/go-zeromq/zmq4"
)

// waitTimeout is how long tests wait for the system to converge; generous
// for a loaded 2-core machine.
const waitTimeout = 20 * time.Second

// quietLogger discards log lines.
var quietLogger = slog.New(slog.NewTextHandler(io.Discard, nil))

// waitFor polls cond until it holds or waitTimeout passes, then fails with
// what() describing the last state.
func waitFor(t testing.TB, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", waitTimeout, what())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// retry calls f until it succeeds or waitTimeout passes.
func retry[T any](t testing.TB, f func() (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		v, err := f()
		if err == nil {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("still failing after %v: %v", waitTimeout, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cell is an index with its applier, as celld wires them.
type cell struct {
	ix *index.Index
	a  *events.Applier
}

// newCell returns a fresh index and applier at router block size 16.
func newCell(t testing.TB) *cell {
	t.Helper()
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	a, err := events.NewApplier(events.DefaultConfig(), ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &cell{ix: ix, a: a}
}

// apply applies b to the reference cell directly, as if received in order.
func (c *cell) apply(t testing.TB, b *events.Batch) {
	t.Helper()
	if err := c.a.ApplyBatch(context.Background(), b); err != nil {
		if _, ok := events.ReasonOf(err); !ok {
			t.Fatalf("reference apply seq %d: %v", b.Seq, err)
		}
	}
}

// canon returns the index content with slots replaced by holder ids, as
// sorted "hash:holder,holder" lines: equal for equal indexes whatever slots
// the holders got.
func (c *cell) canon() []string {
	var out []string
	for _, e := range c.ix.Dump() {
		var hs []string
		e.Holders.ForEach(func(s index.Slot) { hs = append(hs, c.ix.PodID(s)) })
		sort.Strings(hs)
		out = append(out, fmt.Sprintf("%x:%s", uint64(e.Hash), strings.Join(hs, ",")))
	}
	return out
}

// waitEqual waits until got's index equals want's.
func waitEqual(t testing.TB, got, want *cell) {
	t.Helper()
	w := want.canon()
	if len(w) == 0 {
		t.Fatal("reference index is empty: the workload stored nothing")
	}
	var g []string
	waitFor(t, func() string {
		return fmt.Sprintf("index has %d blocks, reference %d", len(g), len(w))
	}, func() bool {
		g = got.canon()
		return slices.Equal(g, w)
	})
}

// workload generates a realistic engine event stream: chains of blocks
// with token ids, extended from their last block or started afresh,
// evictions of chain tails, and rare clears.
type workload struct {
	rng    *rand.Rand
	bs     int
	next   uint64
	chains [][]uint64
}

// newWorkload returns a workload with engine block size bs.
func newWorkload(seed uint64, bs int) *workload {
	return &workload{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), bs: bs, next: seed << 32}
}

// batch returns the next batch (without Pod, Model and Seq).
func (w *workload) batch() *events.Batch {
	b := &events.Batch{DPRank: -1, TS: float64(time.Now().UnixNano()) / 1e9}
	for range 1 + w.rng.IntN(3) {
		b.Events = append(b.Events, w.event())
	}
	return b
}

// event returns one event, keeping the engine's view of its chains.
func (w *workload) event() events.Event {
	r := w.rng.IntN(100)
	switch {
	case r < 2 && len(w.chains) > 0:
		w.chains = nil
		return events.Event{Kind: events.KindAllBlocksCleared}
	case r < 25 && len(w.chains) > 0:
		i := w.rng.IntN(len(w.chains))
		c := w.chains[i]
		m := 1 + w.rng.IntN(len(c))
		ev := events.Event{Kind: events.KindBlockRemoved, BlockHashes: slices.Clone(c[len(c)-m:]), Medium: "GPU"}
		if m == len(c) {
			w.chains = slices.Delete(w.chains, i, i+1)
		} else {
			w.chains[i] = c[:len(c)-m]
		}
		return ev
	}
	n := 1 + w.rng.IntN(6)
	ev := events.Event{Kind: events.KindBlockStored, BlockSize: w.bs, Medium: "GPU"}
	var chain *[]uint64
	if len(w.chains) > 0 && w.rng.IntN(2) == 0 {
		chain = &w.chains[w.rng.IntN(len(w.chains))]
		ev.ParentHash, ev.HasParent = (*chain)[len(*chain)-1], true
	} else {
		w.chains = append(w.chains, nil)
		chain = &w.chains[len(w.chains)-1]
	}
	for range n {
		w.next++
		ev.BlockHashes = append(ev.BlockHashes, w.next)
		*chain = append(*chain, w.next)
		for range w.bs {
			ev.TokenIDs = append(ev.TokenIDs, uint32(w.rng.IntN(32000)))
		}
	}
	return ev
}

// batches returns n batches.
func (w *workload) batches(n int) []*events.Batch {
	out := make([]*events.Batch, n)
	for i := range out {
		out[i] = w.batch()
	}
	return out
}

// startPublisher starts a publisher and closes it at the end of the test.
func startPublisher(t testing.TB, cfg vllmpub.Config) *vllmpub.Publisher {
	t.Helper()
	cfg.Logger = quietLogger
	p := retry(t, func() (*vllmpub.Publisher, error) { return vllmpub.New(cfg) })
	t.Cleanup(func() { p.Close() })
	return p
}

// runSubscriber runs s until the returned stop is called (also at cleanup)
// and waits for Ready.
func runSubscriber(t testing.TB, s *Subscriber) (stop func()) {
	t.Helper()
	stop, err := tryRunSubscriber(t, s)
	if err != nil {
		t.Fatal(err)
	}
	return stop
}

// tryRunSubscriber is runSubscriber returning Run's early error (a bind
// port still held) instead of failing.
func tryRunSubscriber(t testing.TB, s *Subscriber) (stop func(), err error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return %v after its context ended", waitTimeout)
		}
	}
	select {
	case <-s.Ready():
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("Run returned before Ready: %v", err)
	case <-time.After(waitTimeout):
		cancel()
		return nil, fmt.Errorf("not Ready after %v", waitTimeout)
	}
	t.Cleanup(stop)
	return stop, nil
}

// testConfig returns a Subscriber config with short timeouts for tests.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.ReplayTimeout = 3 * time.Second
	cfg.ReconnectMin = 20 * time.Millisecond
	cfg.ReconnectMax = 200 * time.Millisecond
	cfg.Logger = quietLogger
	return cfg
}

// publishAll publishes bs and applies them to ref with the publisher's
// pod, model and sequence numbers.
func publishAll(t testing.TB, p *vllmpub.Publisher, ref *cell, pod, model string, bs []*events.Batch) {
	t.Helper()
	for _, b := range bs {
		seq, err := p.Publish(b)
		if err != nil {
			t.Fatal(err)
		}
		rb := *b
		rb.Pod, rb.Model, rb.Seq = pod, model, seq
		ref.apply(t, &rb)
	}
}

// muteReplay returns the address of a ROUTER socket that accepts replay
// requests and never answers, closed at the end of the test.
func muteReplay(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mute := zmq4.NewRouter(ctx, zmq4.WithLogger(nil))
	if err := mute.Listen("tcp://127.0.0.1:0"); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close(); cancel() })
	return "tcp://" + mute.Addr().String()
}
