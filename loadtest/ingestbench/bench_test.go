package ingestbench

import (
	"context"
	"os"
	"testing"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// benchWorkload builds the workload of the benchmarks: the trace's first
// 2000 requests over 32 pods when the committed trace is there (the test
// slice otherwise).
func benchWorkload(b *testing.B) (Config, *Workload) {
	b.Helper()
	cfg := DefaultConfig()
	cfg.TracePath = "../../" + DefaultTrace
	cfg.MaxRequests = 2000
	if _, err := os.Stat(cfg.TracePath); err != nil {
		cfg.TracePath, cfg.MaxRequests = testTrace, 0
	}
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		b.Fatal(err)
	}
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		b.Fatal(err)
	}
	return cfg, w
}

// BenchmarkSaturation measures one saturation run of the ingest path over
// loopback ZMQ (publishers, subscriber, decoder, applier, index) on a
// pre-built workload: block events per second from the first publish to
// the last batch applied. Allocations include the publishers', zmq4's and
// the rig's setup.
func BenchmarkSaturation(b *testing.B) {
	cfg, w := benchWorkload(b)
	b.ReportAllocs()
	var rate, batches float64
	for b.Loop() {
		ph, err := runPhase(context.Background(), cfg, w, "saturation", 0, nil)
		if err != nil {
			b.Fatal(err)
		}
		if !ph.Valid {
			b.Fatalf("invalid run: %v", ph.Problems)
		}
		rate += ph.BlockEventsPerS
		batches += ph.BatchesPerS
	}
	b.ReportMetric(rate/float64(b.N), "blockevents/s")
	b.ReportMetric(batches/float64(b.N), "batches/s")
}

// BenchmarkBuildWorkload measures generating and encoding the test slice's
// event stream.
func BenchmarkBuildWorkload(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Pods = 4
	recs, err := trace.ReadFile(testTrace, 0)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := BuildWorkload(recs, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
