package workload

import (
	"math/rand/v2"
	"slices"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// ColdRequests is the length of the cold workload when a caller asks for
// no particular size, about the committed conversation trace's.
const ColdRequests = 12000

// coldIDBase is the first hash id the cold workload hands out; ids above
// it are unique to one conversation.
const coldIDBase = uint64(1) << 42

// The cold workload's shape. A conversation's mean length is
// 1 + coldMultiShare*(mean turns - 1), about 1.8 requests, and one of
// them (its first) is cold: a cold share of about 0.55.
const (
	// coldConvRate is conversations started a second (a Poisson process):
	// with about 1.8 requests each, about 3.3 requests a second, the
	// conversation trace's pace.
	coldConvRate = 1.8
	// coldMultiShare is the share of conversations with follow-ups; the
	// rest are one request.
	coldMultiShare = 0.11
	// coldMinTurns and coldMaxTurns bound a multi-turn conversation.
	coldMinTurns, coldMaxTurns = 3, 14
)

// Cold generates n requests of cold-heavy conversations, seeded and
// deterministic:
//
//   - no shared prefix: every conversation's first block is its own, so
//     every first turn (more than half of all requests) starts with a
//     block no earlier request had;
//   - conversations start as a Poisson process (1.8 a second); 89% are
//     one request of 2 to 12 blocks (512 tokens each); the others have 3
//     to 14 turns, the first 2 to 10 blocks, each later turn the last
//     turn's prompt, its answer (one block per 512 output tokens, at
//     least one) and a new user message of 1 to 3 blocks, so prefixes
//     grow;
//   - a follow-up arrives after the answer (its output at 20 ms a token)
//     and 0.5 to 4 s of the user's time: within seconds (median about
//     7.5 s), often before the summaries' 2 s refresh has shown where the
//     last turn went;
//   - outputs are 40 to 500 tokens.
//
// Measured over seeds 42-44 (TestColdShape): cold share 0.53 to 0.56,
// best reachable reuse 0.61 to 0.63, follow-up gap p50 7.6 s, p90 11.5 s.
func Cold(n int, seed uint64) []trace.Record {
	if n <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(seed, 0xc01d))
	next := coldIDBase
	grow := func(ids []uint64, k int) []uint64 {
		for range k {
			next++
			ids = append(ids, next)
		}
		return ids
	}
	// Generate past n so that the conversations still running at the cut
	// are not all short: the trace is sorted by arrival and cut at n.
	out := make([]trace.Record, 0, n+n/4)
	t := 0.0 // seconds
	for len(out) < n+n/4 {
		t += r.ExpFloat64() / coldConvRate
		if r.Float64() >= coldMultiShare {
			ids := grow(nil, 2+r.IntN(11))
			out = append(out, record(t, ids, 40+r.IntN(461)))
			continue
		}
		turns := coldMinTurns + r.IntN(coldMaxTurns-coldMinTurns+1)
		ids := grow(make([]uint64, 0, 64), 2+r.IntN(9))
		at := t
		for range turns {
			outLen := 40 + r.IntN(461)
			out = append(out, record(at, ids, outLen))
			// The next turn: the answer streams, then the user writes.
			at += float64(outLen)*0.02 + 0.5 + 3.5*r.Float64()
			ids = grow(ids, trace.ExpectedIDs(outLen)+1+r.IntN(3))
		}
	}
	slices.SortStableFunc(out, func(a, b trace.Record) int {
		switch {
		case a.Timestamp < b.Timestamp:
			return -1
		case a.Timestamp > b.Timestamp:
			return 1
		}
		return 0
	})
	return out[:n]
}

// record is one request at t seconds over ids (cloned: later turns append
// to the caller's slice).
func record(t float64, ids []uint64, outLen int) trace.Record {
	return trace.Record{Timestamp: int64(t * 1000), InputLength: len(ids) * trace.TokensPerID,
		OutputLength: outLen, HashIDs: slices.Clone(ids)}
}
