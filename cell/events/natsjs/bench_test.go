package natsjs

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// fakeMsg is an in-memory jetstream.Msg that counts its acknowledgements.
type fakeMsg struct {
	data             []byte
	hdr              nats.Header
	md               jetstream.MsgMetadata
	acks, naks, term int
}

func (m *fakeMsg) Metadata() (*jetstream.MsgMetadata, error) { return &m.md, nil }
func (m *fakeMsg) Data() []byte                              { return m.data }
func (m *fakeMsg) Headers() nats.Header                      { return m.hdr }
func (m *fakeMsg) Subject() string                           { return "kv.events.fake" }
func (m *fakeMsg) Reply() string                             { return "" }
func (m *fakeMsg) Ack() error                                { m.acks++; return nil }
func (m *fakeMsg) DoubleAck(context.Context) error           { m.acks++; return nil }
func (m *fakeMsg) Nak() error                                { m.naks++; return nil }
func (m *fakeMsg) NakWithDelay(time.Duration) error          { m.naks++; return nil }
func (m *fakeMsg) InProgress() error                         { return nil }
func (m *fakeMsg) Term() error                               { m.term++; return nil }
func (m *fakeMsg) TermWithReason(string) error               { m.term++; return nil }

var _ jetstream.Msg = (*fakeMsg)(nil)

func BenchmarkParseHeaders(b *testing.B) {
	h := nats.Header{}
	SetHeaders(h, "10.0.0.1:8000", "meta-llama/Llama-3-8B", 123456789, 2)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseHeaders(h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandle measures the consumer's per-message work without the
// network: parse the headers, decode a realistic payload, apply it (the
// applier and index are real) and acknowledge.
func BenchmarkHandle(b *testing.B) {
	a, _ := newApplier(b)
	c := newConsumer(b, DefaultConfig(), a)
	l := newPodLog("10.0.0.1:8000", 1)
	const n = 4096
	msgs := make([]*fakeMsg, n)
	for i := range msgs {
		bt := l.batch(false)
		bt.Seq = uint64(i)
		m, err := NewMsg(DefaultSubjectPrefix, bt, vllmwire.FormArray, "")
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = &fakeMsg{data: m.Data, hdr: m.Header, md: jetstream.MsgMetadata{NumDelivered: 1, NumPending: 1}}
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i == n {
			b.StopTimer()
			a.Kill(l.pod) // start the holder afresh: the log restarts at seq 0
			i = 0
			b.StartTimer()
		}
		c.handle(ctx, msgs[i])
		i++
	}
	if got := c.Counters().Acks.Load(); got == 0 {
		b.Fatalf("Acks = 0, want every message acknowledged")
	}
}

// BenchmarkConsumeEndToEnd measures messages per second through an
// embedded server, for MaxAckPending 1 (strict order, the default) and 64.
func BenchmarkConsumeEndToEnd(b *testing.B) {
	for _, map_ := range []int{1, 64} {
		b.Run(fmt.Sprintf("MaxAckPending=%d", map_), func(b *testing.B) {
			s := startServer(b)
			js := connect(b, s)
			cfg := testConfig(s)
			cfg.MaxAckPending = map_
			ensureTestStream(b, js, cfg)
			logs := []*podLog{newPodLog("a", 1), newPodLog("b", 2), newPodLog("c", 3), newPodLog("d", 4)}
			seqs := map[string]uint64{}
			for i := range b.N {
				l := logs[i%len(logs)]
				bt := l.batch(false)
				bt.Seq = seqs[l.pod]
				seqs[l.pod]++
				m, err := NewMsg(cfg.SubjectPrefix, bt, vllmwire.FormArray, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := js.PublishMsgAsync(m); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(waitTimeout):
				b.Fatal("publish did not complete")
			}
			a, _ := newApplier(b)
			c := newConsumer(b, cfg, events.Sink(a))
			b.ReportAllocs()
			b.ResetTimer()
			r := start(b, c)
			eventually(b, "all handled", func() bool { return c.Counters().Acks.Load() == uint64(b.N) })
			b.StopTimer()
			r.stop()
		})
	}
}
