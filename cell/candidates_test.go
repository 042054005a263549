package cell

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// BenchmarkCandidates measures the per-request candidate build over a full
// cell of 256 pods, a quarter of them with requests in flight: a copy of
// the cached pod list plus the live loads from the tracker.
func BenchmarkCandidates(b *testing.B) {
	cfg := testConfig()
	for i := 0; i < 256; i++ {
		cfg.Pods = append(cfg.Pods, PodConfig{ID: fmt.Sprintf("pod-%03d", i), Address: fmt.Sprintf("127.0.0.1:%d", 20000+i), KVBlocks: 10000})
	}
	c, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 256; i += 4 {
		c.router.tracker.Start(fmt.Sprintf("pod-%03d", i), 100, 20, "")
	}
	if n := len(c.router.candidates(nil)); n != 256 {
		b.Fatalf("%d candidates, want 256", n)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var buf []pipeline.Candidate
	for i := 0; i < b.N; i++ {
		buf = c.router.candidates(buf) // as decide reuses its scratch's
	}
}

// TestCandidatesCarryLoadToEveryHolder checks that a pod's live load reaches
// each of its index holders' candidates, and no other pod's.
func TestCandidatesCarryLoadToEveryHolder(t *testing.T) {
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "a", Address: "127.0.0.1:1"}, {ID: "b", Address: "127.0.0.1:2"}, {ID: "c", Address: "127.0.0.1:3"}}
	c, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for _, h := range []string{"b-rank0", "b-rank1"} {
		s, err := c.ix.Register(h)
		if err != nil {
			t.Fatal(err)
		}
		c.reg.ObserveBatch("b", h, s, 1, true, false, now)
	}
	c.router.invalidate()
	c.router.tracker.Start("b", 100, 20, "")
	got := map[string]int{}
	for _, cand := range c.router.candidates(nil) {
		got[cand.Holder] = cand.ActiveRequests
	}
	want := map[string]int{"a": 0, "b-rank0": 1, "b-rank1": 1, "c": 0}
	if !maps.Equal(got, want) {
		t.Fatalf("active requests by holder %v, want %v", got, want)
	}
}
