package plugins

import (
	"net"

	"github.com/cellrouter/cellrouter/cell/index"
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// KVCost is the reference KV router's cost, as a score: for each pod,
// cost = OverlapWeight * prefill_blocks + decode_blocks, where
// prefill_blocks are the request's blocks the pod does not hold (must be
// prefilled) and decode_blocks are the blocks the pod's active requests
// occupy; the score is -cost (lower cost, higher score). The raw value is
// kept (not normalised) so that the softmax picker sees real differences;
// give it weight 1 and use it alone, as the default profile does.
//
// Blocks the index learned from routing count as held: approximate ones
// (pods without events) fully, speculative ones (a request routed there
// moments ago, not yet confirmed by events) at SpeculativeWeight, default
// 1. Below 1 the scorer asks the index where each matched pod's exact
// depth ends, which costs a map lookup per matched pod with speculative
// blocks.
//
// PressureWeight adds the cache pressure (see pressure.go): a pod whose
// cache is full pays PressureWeight for every cached block that storing
// the request's new blocks would evict there (Candidate.Evicts), the reuse
// those blocks would have given the requests that come back to them.
type KVCost struct {
	OverlapWeight     float64 `yaml:"overlap_weight"`
	SpeculativeWeight float64 `yaml:"speculative_weight"`
	PressureWeight    float64 `yaml:"pressure_weight"`

	split Splitter
}

var _ pipeline.Scorer = (*KVCost)(nil)

func (*KVCost) Type() string { return "kv-cost" }
func (*KVCost) Reads() []pipeline.SlotRef {
	return pipeline.Refs(pipeline.BlockHashes.Ref(), pipeline.Match.Ref())
}
func (*KVCost) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *KVCost) Score(rc *pipeline.Context, out []float64) {
	hs, _ := pipeline.BlockHashes.Get(rc)
	m, _ := pipeline.Match.Get(rc)
	w := s.OverlapWeight
	if o := rc.Req.Overrides.OverlapWeight; o != nil {
		w = *o
	}
	total := len(hs)
	var depth [index.MaxPods]int32
	if m != nil {
		for _, g := range m.Groups() {
			g.Pods.ForEach(func(s index.Slot) { depth[s] = int32(g.Depth) })
		}
	}
	cands := rc.Candidates
	for k, i := range rc.Active() {
		c := &cands[i]
		d := int32(0)
		if c.HasSlot {
			d = depth[c.Slot]
		}
		miss := int32(total) - d
		out[k] = -(w*float64(miss) + float64(c.ActiveBlocks))
		if s.PressureWeight > 0 {
			out[k] -= s.PressureWeight * c.Evicts(int(miss))
		}
	}
	if s.SpeculativeWeight != 1 && s.split != nil && m != nil {
		s.weighSpeculative(rc, out, hs, m, w)
	}
}

// weighSpeculative counts speculative blocks at SpeculativeWeight: a pod
// whose depth d ends in d-e speculative blocks has w*(1-sw)*(d-e) more
// blocks to prefill than Score charged it.
func (s *KVCost) weighSpeculative(rc *pipeline.Context, out []float64, hs []index.BlockHash, m *index.MatchResult, w float64) {
	s.split.SplitLearned(hs, m, m.Matched())
	spec := m.Learned().AndNot(m.Approximate())
	if spec.IsEmpty() {
		return
	}
	for k, i := range rc.Active() {
		if c := &rc.Candidates[i]; c.HasSlot && spec.Has(c.Slot) {
			out[k] -= w * (1 - s.SpeculativeWeight) * float64(m.Depth(c.Slot)-m.ExactDepth(c.Slot))
		}
	}
}

// CacheAffinity scores the fraction of the request's blocks a pod holds.
type CacheAffinity struct{}

var _ pipeline.Scorer = CacheAffinity{}

func (CacheAffinity) Type() string { return "cache-affinity" }
func (CacheAffinity) Reads() []pipeline.SlotRef {
	return pipeline.Refs(pipeline.BlockHashes.Ref(), pipeline.Match.Ref())
}
func (CacheAffinity) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (CacheAffinity) Score(rc *pipeline.Context, out []float64) {
	hs, _ := pipeline.BlockHashes.Get(rc)
	m, _ := pipeline.Match.Get(rc)
	if len(hs) == 0 || m == nil {
		return
	}
	for k, i := range rc.Active() {
		if c := &rc.Candidates[i]; c.HasSlot {
			out[k] = float64(m.Depth(c.Slot)) / float64(len(hs))
		}
	}
}

// LeastLoad scores pods by how few KV blocks (or, with ByRequests,
// requests) their active requests occupy, normalised to [0, 1].
type LeastLoad struct {
	ByRequests bool `yaml:"by_requests"`
}

var _ pipeline.Scorer = (*LeastLoad)(nil)

func (*LeastLoad) Type() string               { return "least-load" }
func (*LeastLoad) Reads() []pipeline.SlotRef  { return noSlots }
func (*LeastLoad) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *LeastLoad) Score(rc *pipeline.Context, out []float64) {
	for k, i := range rc.Active() {
		c := &rc.Candidates[i]
		if s.ByRequests {
			out[k] = -float64(c.ActiveRequests)
		} else {
			out[k] = -float64(c.ActiveBlocks)
		}
	}
	normalize(out)
}

// RoundRobin scores 1 for the next pod in rotation and less for the ones
// after it, so that alone it spreads requests evenly.
type RoundRobin struct{ next atomic.Uint64 }

var _ pipeline.Scorer = (*RoundRobin)(nil)

func (*RoundRobin) Type() string               { return "round-robin" }
func (*RoundRobin) Reads() []pipeline.SlotRef  { return noSlots }
func (*RoundRobin) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *RoundRobin) Score(rc *pipeline.Context, out []float64) {
	n := len(out)
	if n == 0 {
		return
	}
	start := int(s.next.Add(1)-1) % n
	for k := range out {
		out[k] = 1 - float64((k-start+n)%n)/float64(n)
	}
}

// SessionAffinity scores 1 for the pod that served the request's session
// last.
type SessionAffinity struct{ s *Sessions }

var _ pipeline.Scorer = (*SessionAffinity)(nil)

func (*SessionAffinity) Type() string               { return "session-affinity" }
func (*SessionAffinity) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.SessionKey.Ref()) }
func (*SessionAffinity) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *SessionAffinity) Score(rc *pipeline.Context, out []float64) {
	key, _ := pipeline.SessionKey.Get(rc)
	if key == "" || s.s == nil {
		return
	}
	pod, ok := s.s.Pod(key)
	if !ok {
		return
	}
	for k, i := range rc.Active() {
		if rc.Candidates[i].Pod == pod {
			out[k] = 1
		}
	}
}

// Locality scores 1 for decode pods on the same host as the prefill pod,
// where the KV transfer is cheapest.
type Locality struct{}

var _ pipeline.Scorer = Locality{}

func (Locality) Type() string               { return "locality" }
func (Locality) Reads() []pipeline.SlotRef  { return pipeline.Refs(pipeline.PrefillPick.Ref()) }
func (Locality) Writes() []pipeline.SlotRef { return noSlots }

func host(addr string) string {
	if h, _, err := net.SplitHostPort(addr); err == nil {
		return h
	}
	return addr
}

// Score implements pipeline.Scorer.
func (Locality) Score(rc *pipeline.Context, out []float64) {
	pp, ok := pipeline.PrefillPick.Get(rc)
	if !ok || pp == nil {
		return
	}
	h := host(pp.Address)
	for k, i := range rc.Active() {
		if host(rc.Candidates[i].Address) == h {
			out[k] = 1
		}
	}
}

// RouteTemplate scores pods by how many of their active requests run the
// request's route template (looped-transformer requests of one template
// batch well together), normalised to [0, 1].
type RouteTemplate struct{}

var _ pipeline.Scorer = RouteTemplate{}

func (RouteTemplate) Type() string               { return "route-template" }
func (RouteTemplate) Reads() []pipeline.SlotRef  { return noSlots }
func (RouteTemplate) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (RouteTemplate) Score(rc *pipeline.Context, out []float64) {
	if !rc.Req.HasRoute {
		return
	}
	best := 0
	for k, i := range rc.Active() {
		n := rc.Candidates[i].RouteTemplates[rc.Req.RouteTemplate]
		out[k] = float64(n)
		best = max(best, n)
	}
	if best == 0 {
		return
	}
	for k := range out {
		out[k] /= float64(best)
	}
}
