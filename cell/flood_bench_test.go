package cell

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
)

// procStatusKB returns a field of /proc/self/status in kB (VmHWM: the
// peak resident set; VmRSS: the current one), 0 where there is none.
func procStatusKB(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// BenchmarkEventFloodRSS floods one configured pod with a million distinct
// blocks per iteration through a real ZMQ bind socket, into a cell
// configured as in issue 22 (index.max_blocks 500,000, default per-pod
// bounds, the flooding pod without kv_blocks), and reports the process's
// peak RSS (VmHWM, which includes the publisher and the test binary), the
// blocks the flooding pod holds at the end and the blocks applied per
// second. Run -benchtime 10x for the 10 million blocks:
//
//	go test -run XXX -bench EventFloodRSS -benchtime 10x ./cell/
func BenchmarkEventFloodRSS(b *testing.B) {
	const perIter, perBatch, window = 1 << 20, 64, 256
	cfg := testConfig()
	cfg.Index.MaxBlocks = 500_000
	cfg.ZMQ.Bind = "tcp://127.0.0.1:0"
	cfg.Events.DefaultModel = "m"
	cfg.Pods = []PodConfig{{ID: "flood", Model: "m"}}
	c, stop := runCellB(b, cfg)
	defer stop()
	deadline := time.Now().Add(30 * time.Second)
	for c.ZMQBindEndpoint() == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	pcfg := vllmpub.DefaultConfig("flood", "m")
	pcfg.Connect, pcfg.Endpoint, pcfg.ReplayEndpoint, pcfg.BufferSize = true, c.ZMQBindEndpoint(), "", 1
	pub, err := vllmpub.New(pcfg)
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close()
	for !pub.Subscribed() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	before := procStatusKB("VmRSS")
	published := uint64(0)
	settle := func(behind uint64) {
		end := time.Now().Add(60 * time.Second)
		for c.Applier().Counters().Batches.Load()+behind < published {
			if time.Now().After(end) {
				b.Fatalf("the cell applied %d of %d batches", c.Applier().Counters().Batches.Load(), published)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j := 0; j < perIter/perBatch; j++ {
			k := uint64(i)*perIter + uint64(j)*perBatch
			if _, err := pub.Publish(floodChain(uint32(16*k), 1+k, perBatch)); err != nil {
				b.Fatal(err)
			}
			published++
			if published%64 == 0 {
				settle(window)
			}
		}
	}
	settle(0)
	b.StopTimer()
	b.ReportMetric(float64(procStatusKB("VmHWM"))/1024, "peak-RSS-MB")
	b.ReportMetric(float64(before)/1024, "RSS-before-MB")
	b.ReportMetric(float64(c.Index().Stats().Blocks), "index-blocks")
	b.ReportMetric(float64(c.Applier().TrackedBlocks("flood")), "flood-tracked")
	b.ReportMetric(float64(b.N)*perIter/b.Elapsed().Seconds(), "blocks/s")
}

// runCellB is runCell for a benchmark: it starts a cell and returns it with
// a stop that ends Run and waits for it.
func runCellB(b *testing.B, cfg Config) (*Cell, func()) {
	b.Helper()
	c, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	return c, func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run returned %v", err)
		}
	}
}
