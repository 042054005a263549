package natsjs

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
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// waitTimeout is the generous deadline of every wait in these tests: the
// machine they run on is small and shared.
const waitTimeout = 30 * time.Second

// startServer starts an in-process NATS server with JetStream on a free
// port, stopped when the test ends.
func startServer(t testing.TB) *server.Server {
	t.Helper()
	s, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
		NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatalf("server.NewServer: %v", err)
	}
	go s.Start()
	if !s.ReadyForConnections(waitTimeout) {
		t.Fatalf("nats server not ready after %v", waitTimeout)
	}
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	return s
}

// connect returns a JetStream handle on s, closed when the test ends.
func connect(t testing.TB, s *server.Server) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatalf("nats.Connect: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream.New: %v", err)
	}
	return js
}

// ensureTestStream creates the default stream on js.
func ensureTestStream(t testing.TB, js jetstream.JetStream, cfg Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: cfg.Stream, Subjects: cfg.streamSubjects(), Storage: jetstream.FileStorage,
	})
	if err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
}

// testConfig is DefaultConfig pointed at s, with short timings.
func testConfig(s *server.Server) Config {
	cfg := DefaultConfig()
	cfg.URL = s.ClientURL()
	cfg.AckWait = 2 * time.Second
	cfg.NakDelay = 10 * time.Millisecond
	cfg.GapDelay = 10 * time.Millisecond
	cfg.ReadyPoll = 20 * time.Millisecond
	cfg.RetryBackoff = 20 * time.Millisecond
	return cfg
}

// quietLog discards log lines.
func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// eventually polls cond until it holds or waitTimeout passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(2 * time.Millisecond) // polling interval, not synchronisation
	}
}

// newApplier returns an Applier over a fresh index, both closed at the end.
func newApplier(t testing.TB) (*events.Applier, *index.Index) {
	t.Helper()
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		t.Fatalf("index.New: %v", err)
	}
	t.Cleanup(ix.Close)
	a, err := events.NewApplier(events.DefaultConfig(), ix, nil, nil)
	if err != nil {
		t.Fatalf("events.NewApplier: %v", err)
	}
	return a, ix
}

// running is a Consumer started by start.
type running struct {
	c    *Consumer
	stop func()
}

// start runs c until the returned stop is called (stop waits for Run to
// return and checks it returned nil). It is also stopped at the test's end.
func start(t testing.TB, c *Consumer) running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v, want nil", err)
			}
		case <-time.After(waitTimeout):
			t.Errorf("Run did not return within %v of cancel", waitTimeout)
		}
	}
	t.Cleanup(stop)
	return running{c: c, stop: stop}
}

// newConsumer returns a Consumer of cfg feeding sink.
func newConsumer(t testing.TB, cfg Config, sink events.Sink) *Consumer {
	t.Helper()
	c, err := NewConsumer(cfg, sink, quietLog())
	if err != nil {
		t.Fatalf("NewConsumer: %v", err)
	}
	return c
}

// waitReady waits for c's Ready.
func waitReady(t testing.TB, c *Consumer) {
	t.Helper()
	select {
	case <-c.Ready():
	case <-time.After(waitTimeout):
		t.Fatalf("consumer not ready after %v", waitTimeout)
	}
}

// canonical returns the index's blocks as "hash:podA,podB" lines, sorted,
// naming holders by id so indexes whose slots were assigned in a different
// order compare equal.
func canonical(ix *index.Index) []string {
	dump := ix.Dump()
	out := make([]string, 0, len(dump))
	for _, e := range dump {
		var ids []string
		e.Holders.ForEach(func(s index.Slot) { ids = append(ids, ix.PodID(s)) })
		sort.Strings(ids)
		out = append(out, fmt.Sprintf("%016x:%s", uint64(e.Hash), strings.Join(ids, ",")))
	}
	return out
}

// sameIndex fails the test if got and want differ.
func sameIndex(t testing.TB, got, want *index.Index) {
	t.Helper()
	g, w := canonical(got), canonical(want)
	if len(w) == 0 {
		t.Fatalf("reference index is empty: the test log stored nothing")
	}
	if !slices.Equal(g, w) {
		t.Fatalf("index differs from reference: got %d blocks, want %d (first got %v, first want %v)",
			len(g), len(w), head(g), head(w))
	}
}

func head(s []string) []string { return s[:min(3, len(s))] }

// podLog generates a realistic event stream for one pod: chains of stored
// blocks with token ids (engine block size 16), extensions of known chains,
// removals of chain tails, and now and then an AllBlocksCleared.
type podLog struct {
	pod    string
	model  string
	rng    *rand.Rand
	chains [][]uint64 // stored chains, engine hashes in order
	next   uint64
}

func newPodLog(pod string, seed uint64) *podLog {
	return &podLog{pod: pod, model: "llama-3-8b", rng: rand.New(rand.NewPCG(seed, 7)), next: seed<<32 | 1}
}

const engineBlock = 16

// batch returns the pod's next batch (Seq unset) of 1..3 events; clear
// allows an AllBlocksCleared.
func (p *podLog) batch(clear bool) *events.Batch {
	b := &events.Batch{Pod: p.pod, Model: p.model, DPRank: -1, TS: 1.7e9}
	for n := 1 + p.rng.IntN(3); n > 0; n-- {
		b.Events = append(b.Events, p.event(clear))
	}
	return b
}

func (p *podLog) event(clear bool) events.Event {
	r := p.rng.IntN(100)
	switch {
	case clear && r < 3:
		p.chains = nil
		return events.Event{Kind: events.KindAllBlocksCleared}
	case r < 25 && len(p.chains) > 0:
		i := p.rng.IntN(len(p.chains))
		c := p.chains[i]
		tail := c[len(c)-1]
		if len(c) == 1 {
			p.chains = slices.Delete(p.chains, i, i+1)
		} else {
			p.chains[i] = c[:len(c)-1]
		}
		return events.Event{Kind: events.KindBlockRemoved, BlockHashes: []uint64{tail}, Medium: "GPU"}
	}
	n := 1 + p.rng.IntN(4)
	ev := events.Event{Kind: events.KindBlockStored, BlockSize: engineBlock, Medium: "GPU"}
	for range n {
		ev.BlockHashes = append(ev.BlockHashes, p.next)
		p.next++
		for range engineBlock {
			ev.TokenIDs = append(ev.TokenIDs, uint32(p.rng.IntN(32000)))
		}
	}
	if len(p.chains) > 0 && p.rng.IntN(2) == 0 {
		// Extend a known chain from its tail, as a continued conversation.
		i := p.rng.IntN(len(p.chains))
		c := p.chains[i]
		ev.ParentHash, ev.HasParent = c[len(c)-1], true
		p.chains[i] = append(slices.Clone(c), ev.BlockHashes...)
	} else {
		p.chains = append(p.chains, slices.Clone(ev.BlockHashes))
	}
	return ev
}

// natsMsg is nats.Msg, named for the poison table.
type natsMsg = nats.Msg
