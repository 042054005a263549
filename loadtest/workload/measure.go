package workload

import (
	"slices"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Shape is what Measure finds in a trace.
type Shape struct {
	// Requests is the number of records measured.
	Requests int `json:"requests"`
	// ColdShare is the share of requests whose first block no earlier
	// request had: no cache anywhere can hold any of their prefix.
	ColdShare float64 `json:"cold_share"`
	// Reachable is the best reachable reuse: matched blocks over prompt
	// blocks when every request finds the longest prefix of its blocks
	// that any earlier request had (an unbounded cache, one for the
	// fleet).
	Reachable float64 `json:"reachable_reuse"`
	// FollowUps is the number of requests that extend an earlier one by a
	// prefix of at least one block; GapP50Ms and GapP90Ms are the time
	// since the request whose prefix they extend, in ms.
	FollowUps          int     `json:"follow_ups"`
	GapP50Ms, GapP90Ms float64 `json:"-"`
}

// Measure computes the shape of recs (in arrival order). It keeps every
// prefix it has seen, so it is meant for generated traces and tests.
func Measure(recs []trace.Record) Shape {
	s := Shape{Requests: len(recs)}
	if len(recs) == 0 {
		return s
	}
	type node struct {
		parent uint64 // a prefix is named by its last id and its parent's key
		id     uint64
	}
	// seen maps each prefix to the arrival (ms) of the last request that
	// had it, keyed by a running key of the ids so far.
	seen := map[node]int64{}
	keys := map[node]uint64{}
	var blocks, matched, cold int64
	var gaps []float64
	for _, rec := range recs {
		var parent uint64
		depth, last := 0, int64(-1)
		for j, id := range rec.HashIDs {
			n := node{parent, id}
			at, ok := seen[n]
			if ok && depth == j {
				depth, last = j+1, at
			}
			k, ok := keys[n]
			if !ok {
				k = uint64(len(keys)) + 1
				keys[n] = k
			}
			seen[n] = rec.Timestamp
			parent = k
		}
		blocks += int64(len(rec.HashIDs))
		matched += int64(depth)
		if depth == 0 {
			cold++
		} else {
			s.FollowUps++
			gaps = append(gaps, float64(rec.Timestamp-last))
		}
	}
	s.ColdShare = float64(cold) / float64(len(recs))
	s.Reachable = float64(matched) / float64(blocks)
	if len(gaps) > 0 {
		slices.Sort(gaps)
		s.GapP50Ms = gaps[len(gaps)/2]
		s.GapP90Ms = gaps[len(gaps)*9/10]
	}
	return s
}
