package workload

import (
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// TestColdShape: the cold workload has the shape it promises, for several
// seeds: more than half of the requests start with a block no earlier
// request had, the best reachable reuse is high (0.5 to 0.7), follow-ups
// come within seconds (median under 10 s), and the trace paces about as
// the conversation trace does.
func TestColdShape(t *testing.T) {
	for _, seed := range []uint64{42, 43, 44} {
		recs := Cold(ColdRequests, seed)
		s := Measure(recs)
		t.Logf("seed %d: %+v", seed, s)
		if s.Requests != ColdRequests {
			t.Errorf("seed %d: requests got %d, want %d", seed, s.Requests, ColdRequests)
		}
		if !(s.ColdShare > 0.5 && s.ColdShare < 0.6) {
			t.Errorf("seed %d: cold share got %.3f, want in (0.5, 0.6)", seed, s.ColdShare)
		}
		if !(s.Reachable > 0.5 && s.Reachable < 0.7) {
			t.Errorf("seed %d: reachable reuse got %.3f, want in (0.5, 0.7)", seed, s.Reachable)
		}
		if !(s.GapP50Ms > 1000 && s.GapP50Ms < 10000 && s.GapP90Ms < 15000) {
			t.Errorf("seed %d: follow-up gap p50/p90 got %v/%v ms, want p50 in (1, 10) s, p90 under 15 s", seed, s.GapP50Ms, s.GapP90Ms)
		}
		secs := float64(recs[len(recs)-1].Timestamp-recs[0].Timestamp) / 1000
		if rate := float64(len(recs)) / secs; !(rate > 2.5 && rate < 4.5) {
			t.Errorf("seed %d: %.2f requests a second, want about 3.4", seed, rate)
		}
	}
}

// TestColdRecords: every record is valid, arrivals are in order, the
// first blocks of different conversations differ (no shared prefix), and
// a follow-up's prompt extends an earlier prompt of its conversation.
func TestColdRecords(t *testing.T) {
	recs := Cold(3000, 7)
	firsts := map[uint64][]uint64{} // first id -> the longest prompt so far
	for i, r := range recs {
		if err := r.Validate(); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if i > 0 && r.Timestamp < recs[i-1].Timestamp {
			t.Fatalf("record %d at %d ms before record %d at %d ms", i, r.Timestamp, i-1, recs[i-1].Timestamp)
		}
		if r.HashIDs[0] <= coldIDBase {
			t.Fatalf("record %d: id %d not above the cold range base", i, r.HashIDs[0])
		}
		prev, ok := firsts[r.HashIDs[0]]
		if ok && (len(r.HashIDs) <= len(prev) || !slices.Equal(r.HashIDs[:len(prev)], prev)) {
			t.Fatalf("record %d: %v does not extend its conversation's last prompt %v", i, r.HashIDs, prev)
		}
		firsts[r.HashIDs[0]] = r.HashIDs
	}
}

// TestColdDeterministic: one seed gives one trace; another seed another.
func TestColdDeterministic(t *testing.T) {
	a, b, c := Cold(500, 1), Cold(500, 1), Cold(500, 2)
	eq := func(x, y []trace.Record) bool {
		return slices.EqualFunc(x, y, func(p, q trace.Record) bool {
			return p.Timestamp == q.Timestamp && p.InputLength == q.InputLength && p.OutputLength == q.OutputLength && slices.Equal(p.HashIDs, q.HashIDs)
		})
	}
	if !eq(a, b) {
		t.Error("seed 1 twice gave different traces")
	}
	if eq(a, c) {
		t.Error("seeds 1 and 2 gave the same trace")
	}
	if got := Cold(0, 1); got != nil {
		t.Errorf("Cold(0) got %d records, want none", len(got))
	}
}

// TestMeasureReference: Measure agrees with a naive reference (every
// earlier prompt kept whole, each request's longest common prefix with
// any of them) on a hand-built trace and on a cut of the cold workload.
func TestMeasureReference(t *testing.T) {
	hand := []trace.Record{
		{Timestamp: 0, HashIDs: []uint64{1, 2, 3}},
		{Timestamp: 1000, HashIDs: []uint64{1, 2, 3, 4}}, // 3 of 4, gap 1 s
		{Timestamp: 1500, HashIDs: []uint64{5}},          // cold
		{Timestamp: 4000, HashIDs: []uint64{1, 9}},       // 1 of 2, gap 3 s
		{Timestamp: 4200, HashIDs: []uint64{2, 3}},       // cold: 2 was never first
	}
	got := Measure(hand)
	if got.ColdShare != 3.0/5 || got.Reachable != 4.0/12 || got.FollowUps != 2 || got.GapP50Ms != 3000 {
		t.Errorf("hand-built: got %+v, want cold 0.6, reachable 4/12, 2 follow-ups, gap p50 3000 ms", got)
	}
	for _, recs := range [][]trace.Record{hand, Cold(800, 3)} {
		var blocks, matched, cold int
		for i, r := range recs {
			best := 0
			for _, e := range recs[:i] {
				n := 0
				for n < len(r.HashIDs) && n < len(e.HashIDs) && r.HashIDs[n] == e.HashIDs[n] {
					n++
				}
				best = max(best, n)
			}
			blocks += len(r.HashIDs)
			matched += best
			if best == 0 {
				cold++
			}
		}
		s := Measure(recs)
		if want := float64(matched) / float64(blocks); s.Reachable != want {
			t.Errorf("%d records: reachable got %v, want %v", len(recs), s.Reachable, want)
		}
		if want := float64(cold) / float64(len(recs)); s.ColdShare != want {
			t.Errorf("%d records: cold share got %v, want %v", len(recs), s.ColdShare, want)
		}
	}
}

// BenchmarkCold times generating the default-sized workload.
func BenchmarkCold(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		Cold(ColdRequests, 42)
	}
}
