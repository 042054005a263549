package zmqsub

import (
	"syscall"
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
// The direct cases read the SUB connections unbuffered, as zmq4's own tcp
// transport does (readBuffer 0), for comparison with the buffered default.
func BenchmarkIngestLoopback(b *testing.B) {
	for _, m := range []struct {
		name string
		form vllmwire.Form
	}{{"array", vllmwire.FormArray}, {"map", vllmwire.FormMap}} {
		for _, rd := range []struct {
			name string
			size int
		}{{"buffered", readBuffer}, {"direct", 0}} {
			b.Run(m.name+"/"+rd.name, func(b *testing.B) {
				defer func(old int) { readBuffer = old }(readBuffer)
				readBuffer = rd.size
				benchIngestLoopback(b, m.form)
			})
		}
	}
}

// cpuTime returns the CPU time the process has used (user and system), a
// steadier measure than wall time on a shared machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchIngestLoopback is one case of BenchmarkIngestLoopback.
func benchIngestLoopback(b *testing.B, form vllmwire.Form) {
	r := newRig(b, false, form, func(c *vllmpub.Config) { c.BufferSize = 1024 }, nil)
	pool := newWorkload(9, 16).batches(4096)
	payloads, err := vllmpub.EncodePayloads(pool, form)
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
	cpu0 := cpuTime()
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
	cpu := cpuTime() - cpu0
	b.StopTimer()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/batch")
	b.ReportMetric(float64(blocks)/elapsed.Seconds(), "blocks/s")
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "batches/s")
	if got := r.sub.Counters().ReplaysRequested.Load(); got != 0 {
		b.Logf("%d replays during the run (%s)", got, r)
	}
}
