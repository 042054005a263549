package zmqsub

import (
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// BenchmarkIngestLoopback measures the whole ingest path over loopback
// ZMQ: a vllmpub publisher sends pre-encoded batches as fast as it can; the
// Subscriber receives, decodes and applies them to a real Applier and
// Index. It reports block events (stored and removed engine blocks) and
// batches per second, from the first publish to the last batch applied.
// Allocations include the publisher's and zmq4's (a frame set per message).
func BenchmarkIngestLoopback(b *testing.B) {
	for _, m := range []struct {
		name string
		form vllmwire.Form
	}{{"array", vllmwire.FormArray}, {"map", vllmwire.FormMap}} {
		b.Run(m.name, func(b *testing.B) {
			r := newRig(b, false, m.form, func(c *vllmpub.Config) { c.BufferSize = 1024 }, nil)
			pool := newWorkload(9, 16).batches(4096)
			payloads, err := vllmpub.EncodePayloads(pool, m.form)
			if err != nil {
				b.Fatal(err)
			}
			blocksPerCycle := 0
			for _, bt := range pool {
				for _, ev := range bt.Events {
					blocksPerCycle += len(ev.BlockHashes)
				}
			}
			processed := func() uint64 {
				c := r.got.a.Counters()
				n := c.Batches.Load()
				for i := range c.BatchesDropped {
					n += c.BatchesDropped[i].Load()
				}
				return n
			}
			base := processed()
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			blocks := 0
			for i := 0; i < b.N; i++ {
				if _, err := r.pub.PublishPayload(payloads[i%len(payloads)]); err != nil {
					b.Fatal(err)
				}
				for _, ev := range pool[i%len(pool)].Events {
					blocks += len(ev.BlockHashes)
				}
			}
			want := base + uint64(b.N)
			waitFor(b, r.String, func() bool { return processed() >= want })
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(blocks)/elapsed.Seconds(), "blocks/s")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "batches/s")
			if got := r.sub.Counters().ReplaysRequested.Load(); got != 0 {
				b.Logf("%d replays during the run (%s)", got, r)
			}
		})
	}
}
