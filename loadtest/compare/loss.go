package compare

import (
	"fmt"
	"slices"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// ReuseLoss says where a mode's prefix reuse went: of the prompt tokens
// some earlier request had sent (Seen, with caches that never evict), how
// many the engines served from cache (Cached) and why the rest missed.
// Every figure is a share of the slice's prompt tokens, so that
// Seen - Cached = Away + InFlight + Evicted - Extra.
//
// A request's prefix counts as seen when any request sent before it
// shared it; it went Away when the pod it was sent to had never been sent
// that prefix (the router chose another pod than the prefix's holder); it
// was InFlight when the pod had been sent the prefix but had not answered
// the request that carries it when this one was sent (a follow-up that
// starts beside its parent's prefill computes the prefix again, as
// enginesim and vLLM do); it was Evicted when the pod had answered it and
// still missed (evicted since, or the pod computed it late). Extra is
// cache hits beyond Seen (the last partial block's rounding). The answer
// (first token) stands for the engine's commit of the prompt's blocks,
// which happens just before it.
type ReuseLoss struct {
	Seen     float64 `json:"seen"`
	Cached   float64 `json:"cached"`
	Away     float64 `json:"away"`
	InFlight float64 `json:"in_flight"`
	Evicted  float64 `json:"evicted"`
	Extra    float64 `json:"extra,omitempty"`
}

// lossRequest is one request's place in the breakdown: when it was sent,
// when its prompt was stored (its first token), where it went and what it
// hit.
type lossRequest struct {
	rec          int // index into recs
	sent, stored int64
	pod          int
	cached       int
}

// blockSeen is the earliest send and store of a block, anywhere or on
// one pod.
type blockSeen struct{ sent, stored int64 }

// reuseLoss computes the breakdown of one mode's results on recs, with the
// engines' block size and hash seed (model). Failed requests count as
// prompts that cached nothing and stored nothing.
func reuseLoss(recs []trace.Record, results []replay.Result, model string, blockSize int) (*ReuseLoss, error) {
	h, err := blockhash.NewHasher(blockSize)
	if err != nil {
		return nil, fmt.Errorf("compare: %v", err)
	}
	seed := blockhash.Seed(blockhash.Keys{Model: model})
	pods := map[string]int{}
	reqs := make([]lossRequest, 0, len(results))
	for _, r := range results {
		if r.Index < 0 || r.Index >= len(recs) {
			continue
		}
		lr := lossRequest{rec: r.Index, sent: int64(r.Sent), stored: -1, pod: -1}
		if r.OK() {
			id, ok := pods[r.Pod]
			if !ok {
				id = len(pods)
				pods[r.Pod] = id
			}
			lr.pod, lr.cached, lr.stored = id, r.CachedTokens, int64(r.Sent+r.TTFT)
		}
		reqs = append(reqs, lr)
	}
	slices.SortStableFunc(reqs, func(a, b lossRequest) int {
		switch {
		case a.sent < b.sent:
			return -1
		case a.sent > b.sent:
			return 1
		}
		return 0
	})
	type podBlock struct {
		h   blockhash.Hash
		pod int
	}
	anywhere := map[blockhash.Hash]blockSeen{}
	onPod := map[podBlock]blockSeen{}
	var out ReuseLoss
	var prompt int64
	var tokens []uint32
	var chain []blockhash.Hash
	note := func(m blockSeen, ok bool, sent, stored int64) blockSeen {
		if !ok {
			return blockSeen{sent: sent, stored: stored}
		}
		m.sent = min(m.sent, sent)
		if stored >= 0 && (m.stored < 0 || stored < m.stored) {
			m.stored = stored
		}
		return m
	}
	for _, q := range reqs {
		tokens = replay.PromptTokens(tokens[:0], recs[q.rec])
		chain = h.Chain(seed, tokens, chain[:0])
		limit := (len(tokens) - 1) / blockSize // a full hit recomputes the last block
		seen, podSeen, podStored := 0, 0, 0
		for d := 0; d < min(len(chain), limit); d++ {
			if _, ok := anywhere[chain[d]]; !ok {
				break
			}
			seen = d + 1
		}
		if q.pod >= 0 {
			for d := 0; d < seen; d++ {
				b, ok := onPod[podBlock{chain[d], q.pod}]
				if !ok {
					break
				}
				podSeen = d + 1
				if b.stored >= 0 && b.stored <= q.sent && podStored == d {
					podStored = d + 1
				}
			}
		}
		s, ps, st, c := seen*blockSize, podSeen*blockSize, podStored*blockSize, q.cached
		prompt += int64(len(tokens))
		out.Seen += float64(s)
		out.Cached += float64(c)
		out.Away += float64(max(0, s-max(ps, c)))
		out.InFlight += float64(max(0, ps-max(st, c)))
		out.Evicted += float64(max(0, st-c))
		out.Extra += float64(max(0, c-s))
		for d := range chain {
			a, ok := anywhere[chain[d]]
			anywhere[chain[d]] = note(a, ok, q.sent, q.stored)
			if q.pod >= 0 {
				k := podBlock{chain[d], q.pod}
				b, ok := onPod[k]
				onPod[k] = note(b, ok, q.sent, q.stored)
			}
		}
	}
	if prompt > 0 {
		p := float64(prompt)
		out.Seen, out.Cached, out.Away, out.InFlight, out.Evicted, out.Extra =
			out.Seen/p, out.Cached/p, out.Away/p, out.InFlight/p, out.Evicted/p, out.Extra/p
	}
	return &out, nil
}
