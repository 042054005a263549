package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// naiveReuseLoss is reuseLoss by brute force: every request against every
// earlier one, prefixes compared token block by token block.
func naiveReuseLoss(t *testing.T, recs []trace.Record, results []replay.Result, blockSize int) ReuseLoss {
	t.Helper()
	h, err := blockhash.NewHasher(blockSize)
	if err != nil {
		t.Fatal(err)
	}
	seed := blockhash.Seed(blockhash.Keys{Model: "m"})
	rs := slices.Clone(results)
	slices.SortStableFunc(rs, func(a, b replay.Result) int { return int(a.Sent - b.Sent) })
	chains := make([][]blockhash.Hash, len(rs))
	for i, r := range rs {
		chains[i] = h.Chain(seed, replay.PromptTokens(nil, recs[r.Index]), nil)
	}
	lcp := func(a, b []blockhash.Hash) int {
		n := 0
		for n < len(a) && n < len(b) && a[n] == b[n] {
			n++
		}
		return n
	}
	var out ReuseLoss
	var prompt float64
	for i, r := range rs {
		limit := (recs[r.Index].InputLength - 1) / blockSize
		seen, podSeen, podStored := 0, 0, 0
		for j := range i {
			l := min(lcp(chains[i], chains[j]), limit)
			seen = max(seen, l)
			if r.OK() && rs[j].OK() && rs[j].Pod == r.Pod {
				podSeen = max(podSeen, l)
				if rs[j].Sent+rs[j].TTFT <= r.Sent {
					podStored = max(podStored, l)
				}
			}
		}
		c := 0
		if r.OK() {
			c = r.CachedTokens
		}
		s, ps, st := seen*blockSize, podSeen*blockSize, podStored*blockSize
		prompt += float64(recs[r.Index].InputLength)
		out.Seen += float64(s)
		out.Cached += float64(c)
		out.Away += float64(max(0, s-max(ps, c)))
		out.InFlight += float64(max(0, ps-max(st, c)))
		out.Evicted += float64(max(0, st-c))
		out.Extra += float64(max(0, c-s))
	}
	out.Seen, out.Cached, out.Away, out.InFlight, out.Evicted, out.Extra =
		out.Seen/prompt, out.Cached/prompt, out.Away/prompt, out.InFlight/prompt, out.Evicted/prompt, out.Extra/prompt
	return out
}

// TestReuseLossMatchesNaive checks the breakdown against the brute-force
// model on random conversations: shared roots, growing prefixes, pods,
// overlapping requests and failures.
func TestReuseLossMatchesNaive(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 7))
		const blockSize = 16
		var recs []trace.Record
		var results []replay.Result
		for i := range 150 {
			var ids []uint64
			if i > 0 && r.IntN(3) > 0 {
				ids = slices.Clone(recs[r.IntN(len(recs))].HashIDs) // a follow-up of an earlier prompt
				if r.IntN(2) == 0 {
					ids = ids[:1+r.IntN(len(ids))]
				}
			} else {
				ids = []uint64{uint64(r.IntN(3))} // one of a few shared roots
			}
			ids = append(ids, 1000+uint64(i))
			recs = append(recs, trace.Record{HashIDs: ids, InputLength: len(ids)*trace.TokensPerID - r.IntN(100), OutputLength: 1})
			res := replay.Result{Index: i, Sent: time.Duration(r.IntN(2000)) * time.Millisecond,
				TTFT: time.Duration(1+r.IntN(300)) * time.Millisecond, Pod: []string{"a", "b", "c"}[r.IntN(3)],
				CachedTokens: r.IntN(len(ids)) * trace.TokensPerID}
			if r.IntN(20) == 0 {
				res.Err = replay.ErrHTTP5xx
			}
			results = append(results, res)
		}
		got, err := reuseLoss(recs, results, "m", blockSize)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveReuseLoss(t, recs, results, blockSize)
		for _, f := range []struct {
			name      string
			got, want float64
		}{{"seen", got.Seen, want.Seen}, {"cached", got.Cached, want.Cached}, {"away", got.Away, want.Away},
			{"in_flight", got.InFlight, want.InFlight}, {"evicted", got.Evicted, want.Evicted}, {"extra", got.Extra, want.Extra}} {
			if math.Abs(f.got-f.want) > 1e-9 {
				t.Errorf("seed %d: %s = %v, want %v", seed, f.name, f.got, f.want)
			}
		}
		if sum := got.Away + got.InFlight + got.Evicted - got.Extra; math.Abs(sum-(got.Seen-got.Cached)) > 1e-9 {
			t.Errorf("seed %d: away+in_flight+evicted-extra = %v, want seen-cached = %v", seed, sum, got.Seen-got.Cached)
		}
		if got.Seen == 0 || got.Away == 0 || got.InFlight == 0 || got.Evicted == 0 {
			t.Errorf("seed %d: %+v: want every bucket exercised", seed, *got)
		}
	}
}
