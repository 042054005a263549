package compare

import (
	"time"

	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/report"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// ReuseMethod says how ReachableReuse is computed, for the JSON report.
const ReuseMethod = "the slice replayed in arrival order through one LRU prefix cache (package engine) " +
	"with the fleet's total capacity (pods x blocks_per_pod blocks of block_size tokens): " +
	"the cached-token ratio a router that pooled every pod's cache would reach"

// ModeResult is one routing mode's replay: the client-side Summary (its
// JSON fields sit at the top level: ttft_p50_ms, ttft_p99_ms,
// cached_token_ratio, max_pod_share...) and what the engines saw.
type ModeResult struct {
	report.Summary
	// Profile is the cell profile the mode routed with; About says what it
	// does.
	Profile string `json:"profile"`
	About   string `json:"about"`
	// EngineCachedTokens sums the engines' own count of prefix-cache hits.
	EngineCachedTokens int64 `json:"engine_cached_tokens"`
	// EvictedBlocksEst estimates the blocks the engines evicted: blocks
	// computed (prompt tokens not cached, over the block size) minus blocks
	// held at the end, summed over pods. Partial blocks make it a slight
	// overestimate.
	EvictedBlocksEst int64 `json:"evicted_blocks_est"`
	// FullPods counts pods whose cache was full at the end.
	FullPods int `json:"full_pods"`
	// VsRoundRobin sets the mode against round_robin, when both ran.
	VsRoundRobin *Versus `json:"vs_round_robin,omitempty"`
	// Bypassed counts the requests sent around the cell (Config.Bypass).
	Bypassed int64 `json:"bypassed,omitempty"`
	// ReuseLoss says where the reuse the mode missed went (routed away
	// from the prefix, sent beside the prefix's own prefill, evicted).
	ReuseLoss *ReuseLoss `json:"reuse_loss,omitempty"`

	results []replay.Result
}

// Versus is a mode against round-robin: TTFT, reuse and balance.
type Versus struct {
	// TTFTP50Speedup and TTFTP99Speedup are round-robin's TTFT over the
	// mode's (above 1: the mode is faster).
	TTFTP50Speedup float64 `json:"ttft_p50_speedup"`
	TTFTP99Speedup float64 `json:"ttft_p99_speedup"`
	// CachedRatioGain is the mode's cached-token ratio minus round-robin's.
	CachedRatioGain float64 `json:"cached_ratio_gain"`
	// MaxShareOverMean is the mode's busiest pod over an even share;
	// RoundRobinMaxShareOverMean round-robin's, for scale.
	MaxShareOverMean           float64 `json:"max_share_over_mean"`
	RoundRobinMaxShareOverMean float64 `json:"round_robin_max_share_over_mean"`
}

// versus compares m with round-robin's rr.
func versus(m, rr *ModeResult) *Versus {
	v := &Versus{CachedRatioGain: m.CachedTokenRatio - rr.CachedTokenRatio}
	if m.TTFTP50Ms > 0 {
		v.TTFTP50Speedup = rr.TTFTP50Ms / m.TTFTP50Ms
	}
	if m.TTFTP99Ms > 0 {
		v.TTFTP99Speedup = rr.TTFTP99Ms / m.TTFTP99Ms
	}
	if m.MeanPodShare > 0 {
		v.MaxShareOverMean = m.MaxPodShare / m.MeanPodShare
	}
	if rr.MeanPodShare > 0 {
		v.RoundRobinMaxShareOverMean = rr.MaxPodShare / rr.MeanPodShare
	}
	return v
}

// Checks are the comparison's acceptance figures.
type Checks struct {
	// KVTTFTP50Speedup is round-robin's TTFT p50 over kv's (want >= 2).
	KVTTFTP50Speedup float64 `json:"kv_ttft_p50_speedup_vs_round_robin"`
	// KVReuseOverReachable is kv's cached-token ratio over the reachable
	// reuse (want >= 0.9).
	KVReuseOverReachable float64 `json:"kv_cached_ratio_over_reachable"`
	// KVMaxShareOverMean is kv's largest pod share over an even share
	// (want <= 2).
	KVMaxShareOverMean float64 `json:"kv_max_share_over_mean"`
	// Evicting says the kv run's engines evicted blocks.
	Evicting bool `json:"evicting"`
	// Pass is all four.
	TTFTPass    bool `json:"ttft_pass"`
	ReusePass   bool `json:"reuse_pass"`
	BalancePass bool `json:"balance_pass"`
	Pass        bool `json:"pass"`
}

// Report is the comparison.
type Report struct {
	// ReachableReuse is the cached-token ratio an ideal router reaches at
	// the fleet's cache size (see ReuseMethod); UnboundedReuse the same
	// with a cache that never evicts.
	ReachableReuse       float64 `json:"reachable_reuse"`
	ReachableReuseMethod string  `json:"reachable_reuse_method"`
	UnboundedReuse       float64 `json:"unbounded_reuse"`

	// Workload is the workload replayed (conversation or cold).
	Workload     string  `json:"workload"`
	Requests     int     `json:"requests"`
	Sample       int     `json:"sample"`
	PromptTokens int64   `json:"prompt_tokens"`
	TraceSpanS   float64 `json:"trace_span_s"`
	TimeScale    float64 `json:"time_scale"`
	MaxTokensCap int     `json:"max_tokens_cap"`

	Pods              int     `json:"pods"`
	BlocksPerPod      int     `json:"blocks_per_pod"`
	BlockSize         int     `json:"block_size"`
	PrefillPerTokenUs float64 `json:"prefill_per_token_us"`
	DecodePerTokenMs  float64 `json:"decode_per_token_ms"`
	MaxRunning        int     `json:"max_running"`
	KVOverlapWeight   float64 `json:"kv_overlap_weight"`
	// PrefixWait says whether the cache-aware modes ran with the cell's
	// prefix wait (Config.PrefixWait).
	PrefixWait bool `json:"prefix_wait"`
	// FlowControl says whether the cell ran with flow control
	// (Config.FlowControl).
	FlowControl bool `json:"flow_control"`
	// AffinityLookahead is flow control's cache affinity
	// (Config.AffinityLookahead; 1: first come, first served).
	AffinityLookahead int `json:"affinity_lookahead"`
	// AffinityWait is flow control's affinity wait (Config.AffinityWait).
	AffinityWait bool `json:"affinity_wait"`
	// MaxInflightPerPod is flow control's per-pod cap (0: off), and
	// EngineMaxRunning the engines' running batch the cell is told
	// (Config.MaxRunning).
	MaxInflightPerPod int `json:"max_inflight_per_pod"`
	EngineMaxRunning  int `json:"engine_max_running"`

	// Modes are the modes run, by name (random, round_robin, kv-nospec,
	// kv, approx).
	Modes map[string]*ModeResult `json:"modes"`
	// Checks are present when round_robin and kv both ran.
	Checks *Checks `json:"checks,omitempty"`
	// Saturation is kv against round-robin, kv-nospec and approx at
	// three percentiles and each mode's share of the reachable reuse;
	// present when kv ran.
	Saturation *Saturation `json:"saturation,omitempty"`
	// Bypass sets kv-engine against kv when traffic bypassed the cell
	// (Config.Bypass) and both ran.
	Bypass *BypassFigure `json:"bypass,omitempty"`
	// WallS is the whole comparison's wall time.
	WallS float64 `json:"wall_s"`

	order      []string
	bypass     float64
	bypassPods int
}

// newReport starts the report of cfg on recs.
func newReport(cfg Config, recs []trace.Record) *Report {
	r := &Report{
		ReachableReuseMethod: ReuseMethod, Workload: cfg.Workload, Requests: len(recs), Sample: cfg.Sample,
		TimeScale: cfg.TimeScale, MaxTokensCap: cfg.MaxTokensCap, Pods: cfg.Pods, BlocksPerPod: cfg.BlocksPerPod,
		BlockSize: cfg.BlockSize, MaxRunning: cfg.MaxRunning, KVOverlapWeight: cfg.KVOverlapWeight, PrefixWait: cfg.PrefixWait,
		FlowControl: cfg.FlowControl, AffinityLookahead: cfg.AffinityLookahead, AffinityWait: cfg.AffinityWait,
		MaxInflightPerPod: cfg.MaxInflightPerPod, EngineMaxRunning: cfg.MaxRunning,
		PrefillPerTokenUs: float64(cfg.PrefillPerToken) / float64(time.Microsecond),
		DecodePerTokenMs:  float64(cfg.DecodePerToken) / float64(time.Millisecond),
		Modes:             map[string]*ModeResult{}, order: cfg.Modes,
		bypass: cfg.Bypass, bypassPods: cfg.BypassPods,
	}
	for _, rec := range recs {
		r.PromptTokens += int64(rec.InputLength)
	}
	r.TraceSpanS = float64(recs[len(recs)-1].Timestamp-recs[0].Timestamp) / 1000
	return r
}

// BypassFigure is the engine load comparison: with a share of the traffic
// sent around the router, kv routes on its own load estimate only and
// kv-engine corrects it with the engines' metrics.
type BypassFigure struct {
	// Share is the share of requests sent around the cell; Pods the pods
	// they went to.
	Share float64 `json:"share"`
	Pods  int     `json:"pods"`
	// KVTTFTP90Ms and KVEngineTTFTP90Ms are the two modes' TTFT p90 over
	// every request (routed and bypassed).
	KVTTFTP90Ms       float64 `json:"kv_ttft_p90_ms"`
	KVEngineTTFTP90Ms float64 `json:"kv_engine_ttft_p90_ms"`
	// TTFTP90Ratio is kv's TTFT p90 over kv-engine's (above 1: the engine
	// signals help); Pass says it reached 1.3.
	TTFTP90Ratio float64 `json:"ttft_p90_ratio"`
	// TTFTP50Ratio and TTFTP99Ratio are the same at p50 and p99.
	TTFTP50Ratio float64 `json:"ttft_p50_ratio"`
	TTFTP99Ratio float64 `json:"ttft_p99_ratio"`
	Pass         bool    `json:"pass"`
}

// finish computes the checks and the wall time.
func (r *Report) finish(wall time.Duration) {
	r.WallS = wall.Seconds()
	if kv, ke := r.Modes[ModeKV], r.Modes[ModeKVEngine]; kv != nil && ke != nil && r.bypass > 0 {
		b := &BypassFigure{Share: r.bypass, Pods: r.bypassPods, KVTTFTP90Ms: kv.TTFTP90Ms, KVEngineTTFTP90Ms: ke.TTFTP90Ms}
		ratio := func(a, b float64) float64 {
			if b > 0 {
				return a / b
			}
			return 0
		}
		b.TTFTP90Ratio = ratio(kv.TTFTP90Ms, ke.TTFTP90Ms)
		b.TTFTP50Ratio = ratio(kv.TTFTP50Ms, ke.TTFTP50Ms)
		b.TTFTP99Ratio = ratio(kv.TTFTP99Ms, ke.TTFTP99Ms)
		b.Pass = b.TTFTP90Ratio >= 1.3
		r.Bypass = b
	}
	r.Saturation = r.saturation()
	kv, rr := r.Modes[ModeKV], r.Modes[ModeRoundRobin]
	if rr != nil {
		for name, m := range r.Modes {
			if name != ModeRoundRobin {
				m.VsRoundRobin = versus(m, rr)
			}
		}
	}
	if kv == nil || rr == nil {
		return
	}
	c := &Checks{Evicting: kv.EvictedBlocksEst > 0}
	if kv.TTFTP50Ms > 0 {
		c.KVTTFTP50Speedup = rr.TTFTP50Ms / kv.TTFTP50Ms
	}
	if r.ReachableReuse > 0 {
		c.KVReuseOverReachable = kv.CachedTokenRatio / r.ReachableReuse
	}
	if kv.MeanPodShare > 0 {
		c.KVMaxShareOverMean = kv.MaxPodShare / kv.MeanPodShare
	}
	c.TTFTPass = c.KVTTFTP50Speedup >= 2
	c.ReusePass = c.KVReuseOverReachable >= 0.9
	c.BalancePass = c.KVMaxShareOverMean > 0 && c.KVMaxShareOverMean <= 2
	c.Pass = c.TTFTPass && c.ReusePass && c.BalancePass && c.Evicting
	r.Checks = c
}
