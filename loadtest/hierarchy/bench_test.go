package hierarchy

import (
	"context"
	"testing"

	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// BenchmarkRoute times one request through both routers (the replay's hot
// path: hashing, flat decision and admission, global search, probes,
// hand-off and admission) on the small trace with a 4x8 fleet, with
// summaries published every 2 s of trace time as in the replay.
func BenchmarkRoute(b *testing.B) {
	cfg := smallConfig()
	cfg.Cells, cfg.PodsPerCell = 4, 8
	cfg.MaxRequests = 0
	recs, err := trace.ReadFile(cfg.TracePath, 0)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newSim(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	if err := s.replay(context.Background(), recs); err != nil {
		b.Fatal(err)
	}
	if err := s.hier.publish(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	req := &pipeline.Request{Model: Model}
	var toks []uint32
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		rec := recs[i%len(recs)]
		toks = toks[:0]
		for _, id := range rec.HashIDs {
			toks = trace.AppendTokens(toks, id)
		}
		req.TokenIDs = toks
		now := int64(1e12) + int64(i)*1e6
		r := request{i: i, now: now, end: now, req: req, chain: s.hasher.Chain(s.seed, toks, nil), blocks: 1}
		if _, err := s.flat.route(ctx, &r); err != nil {
			b.Fatal(err)
		}
		if _, err := s.hier.route(ctx, &r); err != nil {
			b.Fatal(err)
		}
		s.flat.load.advance(now)
		s.hier.load.advance(now)
	}
}

// BenchmarkPublish times one summary generation of one cell (rebuild from
// the held set, publish, encode header and delta) after the small trace.
func BenchmarkPublish(b *testing.B) {
	cfg := smallConfig()
	cfg.MaxRequests = 0
	recs, err := trace.ReadFile(cfg.TracePath, 0)
	if err != nil {
		b.Fatal(err)
	}
	s, err := newSim(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer s.close()
	if err := s.replay(context.Background(), recs); err != nil {
		b.Fatal(err)
	}
	cl, sm := s.hier.cells[0], s.hier.sums[0]
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := sm.publish(cl.held, s.hier.views[0].Load); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cl.held.Len()), "blocks")
}
