package compare

import "github.com/cellrouter/cellrouter/loadtest/trace"

// SampleConversations keeps about one conversation in k of recs, in
// order. The Mooncake trace is a prefix tree whose root (hash id 0, a
// shared system prompt) fans out thousands of ways; the subtree under a
// request's second hash id is one conversation (or a family of them), and
// the prefix reuse the trace has lives inside those subtrees. Keeping
// whole subtrees across the whole trace preserves that reuse, where a
// contiguous slice of the first minutes holds few later turns (the first
// 1,000 requests reuse 22% of their tokens even with an unbounded cache,
// against 38% for the sample of one in ten). Requests of one block (no
// second id) are kept by their position. k = 1 keeps everything.
func SampleConversations(recs []trace.Record, k int) []trace.Record {
	if k <= 1 {
		return recs
	}
	var out []trace.Record
	for i, r := range recs {
		key := uint64(i)
		if len(r.HashIDs) > 1 {
			key = r.HashIDs[1]
		}
		// A multiplicative hash spreads the first-seen numbering of ids,
		// so that the kept subtrees are not just every k-th new one.
		if (key*0x9e3779b97f4a7c15)>>20%uint64(k) == 0 {
			out = append(out, r)
		}
	}
	return out
}
