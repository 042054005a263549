package plugins

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// TTFTCost scores each pod by minus the time to first token a request
// would see there, in milliseconds, from a model of the engine:
//
//	ttft = queue wait + prefill of the blocks the pod does not hold
//
// so that cache affinity (prefill saved) and load balance (queue wait) are
// weighed in one unit. A pod is modelled as MaxRunning servers fed by one
// FIFO queue (vLLM's max_num_seqs running batch); a request holds a server
// while it prefills its uncached prompt tokens at PrefillPerTokenUs each
// and decodes DecodeTokens tokens at DecodePerTokenMs each. With R
// requests in flight on the pod, S = MaxRunning servers and W the
// requests' remaining work (the router's pending prefill blocks times the
// block prefill time, plus R decodes; mean m = W/R), a new request starts
// once k = R-S+1 of them have finished: the first of S running requests
// with residuals spread evenly over [0, 2m] ends after 2m/(S+1), and each
// further one about m/S later (see queueWait), so
//
//	wait = 0                          when R < S (a server is free)
//	wait = m * (2/(S+1) + (k-1)/S)    otherwise
//
// Speculative blocks (a request was routed there moments ago; no event
// has confirmed them) count at SpeculativeWeight, approximate ones (pods
// without events) and exact ones fully. A burst of one new prefix thus
// follows its first request while that pod has free servers (the copies
// run beside it), and spreads once the pod's queue wait exceeds the
// prefill the prefix saves: the wait, not a weight tuned to one load, is
// what stops the pile. (Counting a speculative block only once it is
// expected stored, from the pod's pending prefill, lost more reuse than it
// saved in loadtest compare: a pod busy with another request's prefill
// hid follow-ups whose prefix had been stored, while the KV events lagged
// behind under load.)
//
// Ties (equal expected time, such as idle pods without the prefix) go to
// the pod with fewer requests in flight, then to the one whose KV cache
// its active requests fill least.
type TTFTCost struct {
	// PrefillPerTokenUs is the engine's prefill time per uncached prompt
	// token, in microseconds.
	PrefillPerTokenUs float64 `yaml:"prefill_per_token_us"`
	// DecodePerTokenMs is the time of one decoded token of one request in
	// the running batch, in milliseconds.
	DecodePerTokenMs float64 `yaml:"decode_per_token_ms"`
	// DecodeTokens is the output tokens a request is expected to decode
	// (the mean of the workload's completions).
	DecodeTokens float64 `yaml:"decode_tokens"`
	// MaxRunning is the requests a pod runs at once; the rest queue.
	MaxRunning int `yaml:"max_running"`
	// SpeculativeWeight is what a speculative block counts for, in [0, 1],
	// once it is expected cached when the request starts.
	SpeculativeWeight float64 `yaml:"speculative_weight"`

	blockSize int
	split     Splitter
}

var _ pipeline.Scorer = (*TTFTCost)(nil)

// DefaultTTFTCost returns the engine model's defaults, a starting point
// for an 8B model on one H100-class GPU (the package doc explains each);
// measure the fleet's engines and set them.
func DefaultTTFTCost() TTFTCost {
	return TTFTCost{PrefillPerTokenUs: 25, DecodePerTokenMs: 10, DecodeTokens: 128, MaxRunning: 8, SpeculativeWeight: 1}
}

func (*TTFTCost) Type() string { return "ttft-cost" }
func (*TTFTCost) Reads() []pipeline.SlotRef {
	return pipeline.Refs(pipeline.BlockHashes.Ref(), pipeline.Match.Ref())
}
func (*TTFTCost) Writes() []pipeline.SlotRef { return noSlots }

// validate names the first bad parameter.
func (s *TTFTCost) validate() error {
	switch {
	case !(s.PrefillPerTokenUs >= 0):
		return fmt.Errorf("prefill_per_token_us = %v, want >= 0", s.PrefillPerTokenUs)
	case !(s.DecodePerTokenMs >= 0):
		return fmt.Errorf("decode_per_token_ms = %v, want >= 0", s.DecodePerTokenMs)
	case !(s.DecodeTokens >= 0):
		return fmt.Errorf("decode_tokens = %v, want >= 0", s.DecodeTokens)
	case s.MaxRunning < 1:
		return fmt.Errorf("max_running = %d, want >= 1", s.MaxRunning)
	case !(s.SpeculativeWeight >= 0 && s.SpeculativeWeight <= 1):
		return fmt.Errorf("speculative_weight = %v, want in [0, 1]", s.SpeculativeWeight)
	}
	return nil
}

// tieBreakMs is what one request in flight adds to a pod's cost beyond the
// model, so that equal expected times go to the less loaded pod. It is far
// below any modelled duration.
const tieBreakMs = 1e-6

// Score implements pipeline.Scorer.
func (s *TTFTCost) Score(rc *pipeline.Context, out []float64) {
	hs, _ := pipeline.BlockHashes.Get(rc)
	m, _ := pipeline.Match.Get(rc)
	blockMs := s.PrefillPerTokenUs * float64(s.blockSize) / 1000
	var depth [index.MaxPods]int32
	var spec index.HostBitmap // pods whose depth ends in speculative blocks
	if m != nil {
		for _, g := range m.Groups() {
			g.Pods.ForEach(func(s index.Slot) { depth[s] = int32(g.Depth) })
		}
		if s.SpeculativeWeight != 1 && s.split != nil && !m.Matched().IsEmpty() {
			s.split.SplitLearned(hs, m, m.Matched())
			spec = m.Learned().AndNot(m.Approximate())
		}
	}
	hasSpec := !spec.IsEmpty()
	total := len(hs)
	cands := rc.Candidates
	for k, i := range rc.Active() {
		c := &cands[i]
		wait := s.queueWait(c.ActiveRequests, c.PrefillBlocks, blockMs)
		held := 0.0
		if c.HasSlot {
			d := int(depth[c.Slot])
			held = float64(d)
			if hasSpec && spec.Has(c.Slot) {
				exact := m.ExactDepth(c.Slot)
				held = float64(exact)
				held += s.SpeculativeWeight * float64(d-exact)
			}
		}
		prefill := (float64(total) - held) * blockMs
		out[k] = -(wait + prefill + tieBreakMs*(float64(c.ActiveRequests)+occupancy(c)))
	}
}

// occupancy is the share of the candidate's KV cache its active requests
// occupy, in [0, 1] (0 when its size is unknown): the second tie-break.
func occupancy(c *pipeline.Candidate) float64 {
	if c.TotalBlocks <= 0 {
		return 0
	}
	return min(1, float64(c.ActiveBlocks)/float64(c.TotalBlocks))
}

// QueueWaitMs is queueWait for callers outside the scorer (the cell's
// prefix wait bounds its hold by it).
func (s *TTFTCost) QueueWaitMs(requests, pendingBlocks int, blockMs float64) float64 {
	return s.queueWait(requests, pendingBlocks, blockMs)
}

// queueWait is the model's expected wait, in milliseconds, before a new
// request starts on a pod with requests in flight, pendingBlocks of their
// blocks still to prefill at blockMs each: the time for
// requests-MaxRunning+1 of them to finish (see TTFTCost).
func (s *TTFTCost) queueWait(requests, pendingBlocks int, blockMs float64) float64 {
	ahead := requests - s.MaxRunning + 1
	if ahead <= 0 {
		return 0
	}
	work := float64(max(0, pendingBlocks))*blockMs + float64(requests)*s.DecodeTokens*s.DecodePerTokenMs
	mean := work / float64(requests)
	servers := float64(s.MaxRunning)
	return mean * (2/(servers+1) + float64(ahead-1)/servers)
}

// WithTTFTCost returns p with every kv-cost scorer replaced by a ttft-cost
// scorer with cost's parameters (its speculative weight included). The
// engine-active-blocks and lora-affinity scorers beside it weigh KV blocks;
// their weights are multiplied by one block's prefill time, which turns
// them into the same milliseconds.
func WithTTFTCost(p pipeline.ProfileConfig, cost TTFTCost, blockSize int) (pipeline.ProfileConfig, error) {
	score := make([]pipeline.PluginSpec, len(p.Score))
	copy(score, p.Score)
	for i := range score {
		switch score[i].Type {
		case "kv-cost":
			c := cost
			params, err := pipeline.ParamsOf(fmt.Sprintf("{prefill_per_token_us: %v, decode_per_token_ms: %v, decode_tokens: %v, max_running: %d, speculative_weight: %v}",
				c.PrefillPerTokenUs, c.DecodePerTokenMs, c.DecodeTokens, c.MaxRunning, c.SpeculativeWeight))
			if err != nil {
				return p, err
			}
			score[i] = pipeline.PluginSpec{Type: "ttft-cost", Weight: score[i].Weight, Params: params}
		case "engine-active-blocks", "lora-affinity":
			score[i].Weight *= cost.PrefillPerTokenUs * float64(blockSize) / 1000
		}
	}
	p.Score = score
	return p, nil
}
