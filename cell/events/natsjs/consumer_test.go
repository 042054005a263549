package natsjs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/nats-io/nats.go/jetstream"
)

// world is one test's NATS server, publisher and reference: every batch
// published is also applied, in the same order, to the reference applier.
type world struct {
	t      *testing.T
	cfg    Config
	js     jetstream.JetStream
	pub    *Publisher
	ref    *events.Applier
	refIx  *index.Index
	logs   []*podLog
	sent   int // messages published
	good   int // batches the reference applied
	ctx    context.Context
	cancel context.CancelFunc
}

func newWorld(t *testing.T, pods int) *world {
	s := startServer(t)
	w := &world{t: t, cfg: testConfig(s), js: connect(t, s)}
	w.ctx, w.cancel = context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(w.cancel)
	w.pub = NewPublisher(w.js, w.cfg.SubjectPrefix)
	w.ref, w.refIx = newApplier(t)
	for i := range pods {
		// Pod ids with dots and a colon exercise the subject escape.
		w.logs = append(w.logs, newPodLog(fmt.Sprintf("10.0.0.%d:8000", i+1), uint64(i+1)))
	}
	ensureTestStream(t, w.js, w.cfg)
	return w
}

// publish sends rounds batches per pod, round-robin, through pub, and
// applies each to the reference.
func (w *world) publish(pub *Publisher, rounds int, clear bool) {
	w.t.Helper()
	for range rounds {
		for _, l := range w.logs {
			w.publishOne(pub, l.batch(clear))
		}
	}
}

// publishOne publishes b through pub (numbering it) and applies it to the reference.
func (w *world) publishOne(pub *Publisher, b *events.Batch) {
	w.t.Helper()
	if _, err := pub.Publish(w.ctx, b); err != nil {
		w.t.Fatalf("Publish: %v", err)
	}
	w.sent++
	w.refApply(b)
}

// refApply applies b to the reference applier.
func (w *world) refApply(b *events.Batch) {
	w.t.Helper()
	if err := w.ref.ApplyBatch(w.ctx, b); err != nil {
		w.t.Fatalf("reference ApplyBatch %s seq %d: %v", b.Holder(), b.Seq, err)
	}
	w.good++
}

// waitHandled waits until c settled n messages (acked or terminated).
func waitHandled(t *testing.T, c *Consumer, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d messages settled", n), func() bool {
		k := c.Counters()
		return k.Acks.Load()+k.Terms.Load() >= uint64(n)
	})
}

func TestConsumerMatchesReference(t *testing.T) {
	w := newWorld(t, 4)
	w.publish(w.pub, 30, true)
	// Pod 0's engine restarts: a new publisher numbers from 0 again.
	w.publish(NewPublisher(w.js, w.cfg.SubjectPrefix), 10, true)

	a, ix := newApplier(t)
	c := newConsumer(t, w.cfg, a)
	r := start(t, c)
	waitReady(t, c)
	waitHandled(t, c, w.sent)
	r.stop()

	sameIndex(t, ix, w.refIx)
	k := c.Counters()
	if got, want := k.Applied.Load(), uint64(w.sent); got != want {
		t.Errorf("Applied = %d, want %d", got, want)
	}
	if got, want := a.Counters().Batches.Load(), w.ref.Counters().Batches.Load(); got != want {
		t.Errorf("applier Batches = %d, want %d (reference)", got, want)
	}
	if got := a.Counters().Restarts.Load(); got != 4 {
		t.Errorf("applier Restarts = %d, want 4 (one per pod)", got)
	}
	if got := k.Terms.Load() + k.Naks.Load() + k.Redeliveries.Load(); got != 0 {
		t.Errorf("Terms+Naks+Redeliveries = %d, want 0 on a clean log", got)
	}
}

func TestConsumerRestartResumesSameApplier(t *testing.T) {
	w := newWorld(t, 3)
	w.publish(w.pub, 20, true)
	a, ix := newApplier(t)

	c1 := newConsumer(t, w.cfg, a)
	r1 := start(t, c1)
	waitHandled(t, c1, w.sent)
	r1.stop()
	first := w.sent

	w.publish(w.pub, 20, true)
	cfg := w.cfg
	cfg.Replay = false // the applier still holds what was acknowledged
	c2 := newConsumer(t, cfg, a)
	r2 := start(t, c2)
	waitReady(t, c2)
	waitHandled(t, c2, w.sent-first)
	r2.stop()

	sameIndex(t, ix, w.refIx)
	if got, want := c2.Counters().Messages.Load(), uint64(w.sent-first); got != want {
		t.Errorf("second consumer got %d messages, want %d (resume after the last ack)", got, want)
	}
	if got, want := a.Counters().Batches.Load(), uint64(w.sent); got != want {
		t.Errorf("applier Batches = %d, want %d (no loss, no double apply)", got, want)
	}
	if got := a.Counters().BatchesDropped[events.ReasonDuplicate].Load(); got != 0 {
		t.Errorf("duplicates = %d, want 0", got)
	}
}

func TestConsumerRestartReplaysIntoFreshIndex(t *testing.T) {
	w := newWorld(t, 3)
	w.publish(w.pub, 20, true)
	a1, _ := newApplier(t)
	c1 := newConsumer(t, w.cfg, a1)
	r1 := start(t, c1)
	waitHandled(t, c1, w.sent)
	r1.stop()

	// A restarted celld: empty index, Replay (the default) rebuilds it
	// from the stream's history, including what the first run acknowledged.
	w.publish(w.pub, 10, true)
	a2, ix2 := newApplier(t)
	c2 := newConsumer(t, w.cfg, a2)
	r2 := start(t, c2)
	waitReady(t, c2)
	waitHandled(t, c2, w.sent)
	r2.stop()

	sameIndex(t, ix2, w.refIx)
	if got, want := a2.Counters().Batches.Load(), uint64(w.sent); got != want {
		t.Errorf("replayed applier Batches = %d, want %d", got, want)
	}
}

func TestConsumerStopSendsBackUnhandled(t *testing.T) {
	w := newWorld(t, 2)
	w.publish(w.pub, 30, false)
	a, ix := newApplier(t)
	cfg := w.cfg
	cfg.Replay = false
	cfg.MaxAckPending = 64 // let the client buffer messages it will not handle
	// Longer than every wait here: only the Naks can make the server
	// redeliver in time.
	cfg.AckWait = 2 * waitTimeout

	// The first consumer's sink stops it after a few batches, with
	// messages still buffered in the client.
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	sink := events.SinkFunc(func(ctx context.Context, b *events.Batch) error {
		n++
		if n == 10 {
			once.Do(cancel)
		}
		return a.ApplyBatch(ctx, b)
	})
	c1 := newConsumer(t, cfg, sink)
	if err := c1.Run(ctx); err != nil {
		t.Fatalf("Run = %v, want nil", err)
	}
	handled := c1.Counters().Acks.Load()
	if handled == 0 || handled >= uint64(w.sent) {
		t.Fatalf("first consumer acked %d of %d, want some but not all", handled, w.sent)
	}
	if got := c1.Counters().Naks.Load(); got == 0 {
		t.Fatalf("first consumer sent back %d messages, want some", got)
	}

	// The second consumer gets the rest at once (naked, not waiting AckWait).
	c2 := newConsumer(t, cfg, a)
	r2 := start(t, c2)
	eventually(t, "all batches applied", func() bool { return a.Counters().Batches.Load() == uint64(w.sent) })
	r2.stop()
	sameIndex(t, ix, w.refIx)
}

func TestConsumerPoisonTerminated(t *testing.T) {
	w := newWorld(t, 2)
	w.publish(w.pub, 5, false)
	poison := []struct {
		name, label string
		mutate      func(m *natsMsg)
	}{
		{"garbage payload", "msgpack", func(m *natsMsg) { m.Data = []byte{0xc1, 0x00} }},
		{"unknown tag", "unknown_tag", func(m *natsMsg) { m.Data = []byte("\x93\xcb\x41\xd9\x53\xf0\x00\x00\x00\x00\x91\x91\xa4Nope\xc0") }},
		{"no seq", ReasonHeader, func(m *natsMsg) { m.Header.Del(HeaderSeq) }},
		{"bad seq", ReasonHeader, func(m *natsMsg) { m.Header.Set(HeaderSeq, "12x") }},
		{"rank mismatch", ReasonHeader, func(m *natsMsg) { m.Header.Set(HeaderDPRank, "3") }},
	}
	for _, p := range poison {
		b := w.logs[0].batch(false)
		b.Seq = 1000 // never applied: every message here is poison
		b.DPRank = 1
		m, err := NewMsg(w.cfg.SubjectPrefix, b, 0, "")
		if err != nil {
			t.Fatalf("%s: NewMsg: %v", p.name, err)
		}
		p.mutate(m)
		if _, err := w.js.PublishMsg(w.ctx, m); err != nil {
			t.Fatalf("%s: PublishMsg: %v", p.name, err)
		}
		w.sent++
	}
	w.publish(w.pub, 5, false)

	a, ix := newApplier(t)
	c := newConsumer(t, w.cfg, a)
	r := start(t, c)
	waitReady(t, c)
	waitHandled(t, c, w.sent)
	r.stop()

	sameIndex(t, ix, w.refIx)
	k := c.Counters()
	want := map[string]uint64{}
	for _, p := range poison {
		want[p.label]++
	}
	for label, n := range want {
		if got := k.Dropped(label); got != n {
			t.Errorf("Dropped(%q) = %d, want %d", label, got, n)
		}
	}
	if got, want := k.Terms.Load(), uint64(len(poison)); got != want {
		t.Errorf("Terms = %d, want %d", got, want)
	}
	if got := k.Redeliveries.Load(); got != 0 {
		t.Errorf("Redeliveries = %d, want 0: poison must not come back", got)
	}
	if got, want := k.Messages.Load(), uint64(w.sent); got != want {
		t.Errorf("Messages = %d, want %d", got, want)
	}
}

// flakySink fails chosen batches once: before applying them (the sink was
// busy) or after (the ack was lost: the redelivery must not apply twice).
type flakySink struct {
	a          *events.Applier
	failBefore map[string]bool // holder/seq
	failAfter  map[string]bool
}

var errFlaky = errors.New("flaky sink")

func (f *flakySink) ApplyBatch(ctx context.Context, b *events.Batch) error {
	key := fmt.Sprintf("%s/%d", b.Holder(), b.Seq)
	if f.failBefore[key] {
		delete(f.failBefore, key)
		return errFlaky
	}
	err := f.a.ApplyBatch(ctx, b)
	if f.failAfter[key] {
		delete(f.failAfter, key)
		return errFlaky
	}
	return err
}

func TestConsumerNakRedeliveryAppliedOnce(t *testing.T) {
	w := newWorld(t, 2)
	w.publish(w.pub, 10, false)
	a, ix := newApplier(t)
	p0, p1 := w.logs[0].pod, w.logs[1].pod
	sink := &flakySink{
		a:          a,
		failBefore: map[string]bool{p0 + "/3": true},
		failAfter:  map[string]bool{p1 + "/5": true, p0 + "/7": true},
	}
	c := newConsumer(t, w.cfg, sink)
	r := start(t, c)
	waitReady(t, c)
	waitHandled(t, c, w.sent)
	r.stop()

	sameIndex(t, ix, w.refIx)
	k := c.Counters()
	for _, tc := range []struct {
		name      string
		got, want uint64
	}{
		{"Naks", k.Naks.Load(), 3},
		{"Redeliveries", k.Redeliveries.Load(), 3},
		{"Dropped(duplicate)", k.Dropped("duplicate"), 2},
		{"Applied", k.Applied.Load(), uint64(w.sent - 2)},
		{"applier Batches", a.Counters().Batches.Load(), uint64(w.sent)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestConsumerGapGivenUp(t *testing.T) {
	for _, tc := range []struct {
		name          string
		maxAckPending int
		after         int // batches published after the gap
		wantNaks      uint64
	}{
		{"strict order gives up at once", 1, 3, 0},
		// One batch after the gap: with several, the ones sent back may
		// come back in another order (see the package doc).
		{"max ack pending 8 retries first", 8, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, 1)
			l := w.logs[0]
			for range 3 {
				w.publishOne(w.pub, l.batch(false))
			}
			// The publisher loses seq 3 and 4.
			lost := []*events.Batch{l.batch(false), l.batch(false)}
			for i, b := range lost {
				b.Seq = uint64(3 + i)
			}
			var after []*events.Batch
			for range tc.after {
				after = append(after, l.batch(false))
			}
			for i, b := range after {
				b.Seq = uint64(5 + i)
				if err := w.pub.PublishAt(w.ctx, b); err != nil {
					t.Fatalf("PublishAt: %v", err)
				}
				w.sent++
			}
			// The reference gives the gap up the same way.
			if err := w.ref.ApplyBatch(w.ctx, after[0]); !errors.Is(err, events.ErrGap) {
				t.Fatalf("reference ApplyBatch after gap = %v, want ErrGap", err)
			}
			if !w.ref.GiveUp(after[0].Holder()) {
				t.Fatalf("reference GiveUp = false, want true")
			}
			for _, b := range after {
				w.refApply(b)
			}

			cfg := w.cfg
			cfg.MaxAckPending = tc.maxAckPending
			cfg.GapRetries = 2
			a, ix := newApplier(t)
			c := newConsumer(t, cfg, a)
			r := start(t, c)
			waitReady(t, c)
			waitHandled(t, c, w.sent)
			r.stop()

			sameIndex(t, ix, w.refIx)
			k := c.Counters()
			if got := k.GapGiveUps.Load(); got != 1 {
				t.Errorf("GapGiveUps = %d, want 1", got)
			}
			if got := a.Counters().GiveUps.Load(); got != 1 {
				t.Errorf("applier GiveUps = %d, want 1", got)
			}
			if got := k.Naks.Load(); got != tc.wantNaks {
				t.Errorf("Naks = %d, want %d", got, tc.wantNaks)
			}
			if got, want := k.Applied.Load(), uint64(w.sent); got != want {
				t.Errorf("Applied = %d, want %d", got, want)
			}
		})
	}
}

func TestConsumerWaitsForRequiredStream(t *testing.T) {
	s := startServer(t)
	js := connect(t, s)
	cfg := testConfig(s)
	cfg.CreateStream = false
	a, _ := newApplier(t)
	c := newConsumer(t, cfg, a)
	start(t, c)
	eventually(t, "failed attaches", func() bool { return c.Counters().AttachErrors.Load() >= 2 })
	select {
	case <-c.Ready():
		t.Fatalf("Ready closed without a stream")
	default:
	}
	ensureTestStream(t, js, cfg)
	waitReady(t, c)
	if got := c.Counters().Attaches.Load(); got != 1 {
		t.Errorf("Attaches = %d, want 1", got)
	}
}

func TestConsumerDataParallelRanks(t *testing.T) {
	w := newWorld(t, 1)
	l := w.logs[0]
	ranks := []*podLog{l, newPodLog(l.pod, 99)} // one engine per rank
	for i := range 20 {
		rank := i % 2
		b := ranks[rank].batch(true)
		b.DPRank = rank
		seq, err := w.pub.Publish(w.ctx, b)
		if err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if want := uint64(i / 2); seq != want {
			t.Fatalf("batch %d of rank %d numbered %d, want %d (per holder)", i, rank, seq, want)
		}
		w.sent++
		w.refApply(b)
	}
	a, ix := newApplier(t)
	c := newConsumer(t, w.cfg, a)
	r := start(t, c)
	waitHandled(t, c, w.sent)
	r.stop()
	sameIndex(t, ix, w.refIx)
	if got, want := c.Counters().Applied.Load(), uint64(w.sent); got != want {
		t.Errorf("Applied = %d, want %d", got, want)
	}
}

func TestConsumerCreatesStream(t *testing.T) {
	s := startServer(t)
	js := connect(t, s)
	cfg := testConfig(s)
	cfg.StreamMaxAge = time.Minute
	a, ix := newApplier(t)
	c := newConsumer(t, cfg, a)
	r := start(t, c)
	waitReady(t, c) // an empty new stream: nothing to catch up with

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := js.Stream(ctx, cfg.Stream)
	if err != nil {
		t.Fatalf("stream %s not created: %v", cfg.Stream, err)
	}
	if got := st.CachedInfo().Config; got.MaxAge != time.Minute || got.Duplicates != time.Minute || !slices.Equal(got.Subjects, []string{"kv.events.>"}) {
		t.Errorf("created stream config MaxAge %v Duplicates %v Subjects %v, want 1m 1m [kv.events.>]", got.MaxAge, got.Duplicates, got.Subjects)
	}

	ref, refIx := newApplier(t)
	pub := NewPublisher(js, "")
	l := newPodLog("pod-a", 5)
	for range 10 {
		b := l.batch(true)
		if _, err := pub.Publish(ctx, b); err != nil {
			t.Fatalf("Publish: %v", err)
		}
		if err := ref.ApplyBatch(ctx, b); err != nil {
			t.Fatalf("reference ApplyBatch: %v", err)
		}
	}
	waitHandled(t, c, 10)
	r.stop()
	sameIndex(t, ix, refIx)
}
