package compare

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cell"

	"github.com/cellrouter/cellrouter/loadtest/enginesim"
)

// Config says what the comparison replays and on what fleet.
type Config struct {
	// Workload is WorkloadConversation (the trace at TracePath, default)
	// or WorkloadCold (generated; see workload.go).
	Workload string
	// WorkloadRequests is the cold workload's length before sampling
	// (0: workload.ColdRequests, about the trace's); Seed seeds it.
	WorkloadRequests int
	Seed             uint64
	// TracePath is the Mooncake trace.
	TracePath string
	// Sample keeps one conversation in Sample (see SampleConversations);
	// 1 keeps the whole trace.
	Sample int
	// MaxRequests caps the slice after sampling (0 = no cap).
	MaxRequests int
	// TimeScale multiplies the trace's arrival times: 0.01 replays a
	// 3,537 s trace in 35 s.
	TimeScale float64
	// Concurrency caps the requests in flight (0 = no cap).
	Concurrency int
	// MaxTokensCap caps each request's output tokens; decoding is not what
	// the routing modes change, and a short one keeps the run cheap.
	MaxTokensCap int
	// Timeout bounds one request.
	Timeout time.Duration
	// KVOverlapWeight is the kv mode's overlap weight (the default
	// profile's kv_overlap_score_weight): the cost of a block to prefill
	// against a block of decode load. Default 12, not the cell's 1: in the
	// simulator's timing model a 16-token block costs 0.4 ms to prefill and
	// a pod's running batch is small, so a cached block is worth far more
	// than a block of another request's load. Tuned on the quick sample
	// (kv TTFT p50 over round-robin, cached ratio over reachable, busiest
	// pod over the mean): weight 1 gave 1.95x/0.84/1.66, 3 gave
	// 2.3x/0.85-0.92/1.4-1.5, 8 gave 3.1x/0.89/1.5, 12 gave
	// 3.4-3.6x/0.91-0.94/1.8-2.0. Higher weights trade balance for reuse.
	KVOverlapWeight float64
	// Cost is the cell's cost model for the cache-aware modes
	// (routing.cost.model): "blocks" (default, the reference router's cost
	// weighed by KVOverlapWeight) or "ttft", the expected time to first
	// token from the engines' timing model below (PrefillPerToken,
	// DecodePerToken, MaxRunning, with MaxTokensCap output tokens).
	Cost string
	// PrefixWait is the cell's prefix wait for the cache-aware modes
	// (routing.prefix_wait.enabled): a request sent to a pod that is still
	// prefilling part of its prefix waits for that prefill to end, at most
	// the prefill it saves, instead of computing the prefix again beside
	// it. Default: the cell's.
	PrefixWait bool
	// FlowControl is the cell's flow control in every mode
	// (flow_control.enabled, on by default): in this fleet a pod is judged
	// saturated only when the router's active blocks on it reach 95% of
	// its KV cache (no engine metrics, no max_inflight_per_pod). Default:
	// the cell's.
	FlowControl bool
	// AffinityLookahead is flow control's cache affinity
	// (flow_control.affinity_lookahead): how many of a tenant's waiting
	// requests a freed pod is offered to, the one it costs the least
	// prefix first; 1 is first come, first served. Default: the cell's.
	AffinityLookahead int
	// AffinityWait is flow control's affinity wait
	// (flow_control.affinity_wait): a request whose pick is saturated
	// waits for it at most the prefill a detour would cost. Default: the
	// cell's.
	AffinityWait bool
	// MaxInflightPerPod is flow control's per-pod cap on the router's
	// requests in flight (flow_control.max_inflight_per_pod); 0 is off.
	// Every mode's cell is also told the engines' running batch
	// (flow_control.engine_max_running = MaxRunning), as an operator who
	// set vLLM's max_num_seqs would.
	MaxInflightPerPod int
	// KVMaxRequests, when positive, caps the requests the kv mode sends to
	// one pod at a time (a soft filter: ignored when every pod is at the
	// cap). 0 routes with the cell's plain default profile.
	KVMaxRequests int
	// SpeculativeTTL and SpeculativeWeight are the kv mode's speculative
	// entries (the cell's speculative.ttl and speculative.weight); the
	// kv-nospec mode turns them off. Defaults: the cell's.
	SpeculativeTTL    time.Duration
	SpeculativeWeight float64
	// Modes are the routing modes to run, in order (ModeNames by default).
	Modes []string
	// Bypass is the share of requests, in [0, 1), sent straight to a pod
	// around the cell (see bypassFront): traffic the router does not see.
	// 0 sends everything through the cell.
	Bypass float64
	// BypassPods is how many pods (the first of the fleet) the bypassed
	// requests go to.
	BypassPods int

	// Pods is the fleet size.
	Pods int
	// BlocksPerPod is each pod's KV cache in blocks of BlockSize tokens;
	// small enough that the slice evicts.
	BlocksPerPod int
	// BlockSize is the engines' (and the cell's) block size in tokens.
	BlockSize int
	// PrefillPerToken, DecodePerToken and MaxRunning are the engines'
	// timing model (see DefaultConfig for the reasoning).
	PrefillPerToken time.Duration
	DecodePerToken  time.Duration
	MaxRunning      int
	// Model is the served model (and the block hash seed).
	Model string
}

// DefaultConfig returns the full comparison: one conversation in twenty of
// the whole trace (about 570 requests, 38% reachable reuse with an
// unbounded cache) in about 55 s per mode, on 8 pods of 8,192 blocks of 16
// tokens (128k tokens each: the longest prompt fits one pod, and the slice's
// 7M prompt tokens overflow the fleet many times, so the caches evict).
//
// The engines' timing model makes prefill dominate TTFT, as on real GPUs:
// 25µs per uncached prompt token (40k tokens/s, an 8B model's prefill on
// one H100-class GPU with chunked prefill), so a p50 prompt (7k tokens)
// costs 175ms on a miss and the router's and HTTP's own costs (a few ms)
// are small beside it. Decoding takes 2ms per token (a 500 tokens/s
// stream) and does not count in TTFT. MaxRunning 4 caps the requests a pod
// prefills or decodes at once and queues the rest: a GPU's prefill
// throughput is shared, so a router that piles work on one pod pays in
// queueing, which the simulator's independent sleeps would otherwise hide.
func DefaultConfig() Config {
	return Config{
		Workload:          WorkloadConversation,
		Seed:              42,
		TracePath:         "loadtest/traces/conversation_trace.jsonl",
		Sample:            20,
		TimeScale:         0.015,
		Concurrency:       512,
		MaxTokensCap:      16,
		Timeout:           2 * time.Minute,
		KVOverlapWeight:   12,
		Cost:              cell.CostBlocks,
		PrefixWait:        cell.DefaultPrefixWaitConfig().Enabled,
		FlowControl:       cell.DefaultConfig().FlowControl.Enabled,
		AffinityLookahead: cell.DefaultConfig().FlowControl.AffinityLookahead,
		AffinityWait:      cell.DefaultConfig().FlowControl.AffinityWait,
		SpeculativeTTL:    cell.DefaultConfig().Speculative.TTL,
		SpeculativeWeight: cell.DefaultConfig().Speculative.Weight,
		Modes:             ModeNames,
		BypassPods:        2,
		Pods:              8,
		BlocksPerPod:      8192,
		BlockSize:         16,
		PrefillPerToken:   25 * time.Microsecond,
		DecodePerToken:    2 * time.Millisecond,
		MaxRunning:        4,
		Model:             enginesim.DefaultModel,
	}
}

// QuickConfig returns a comparison that finishes in about two and a half
// minutes on two cores: one conversation in forty (about 310 requests,
// 4.2M prompt tokens, 44% reachable reuse unbounded) in about 25 s per
// mode, five modes.
func QuickConfig() Config {
	c := DefaultConfig()
	c.Sample = 40
	c.TimeScale = 0.007
	return c
}

// Validate names the first bad field and its value.
func (c Config) Validate() error {
	if c.KVOverlapWeight < 0 {
		return fmt.Errorf("compare: KVOverlapWeight %v must not be negative", c.KVOverlapWeight)
	}
	if c.SpeculativeTTL <= 0 {
		return fmt.Errorf("compare: SpeculativeTTL %v must be positive (the kv-nospec mode runs without)", c.SpeculativeTTL)
	}
	if c.SpeculativeWeight < 0 || c.SpeculativeWeight > 1 {
		return fmt.Errorf("compare: SpeculativeWeight %v out of [0, 1]", c.SpeculativeWeight)
	}
	switch {
	case c.Cost != cell.CostTTFT && c.Cost != cell.CostBlocks:
		return fmt.Errorf("compare: Cost %q, want %q or %q", c.Cost, cell.CostTTFT, cell.CostBlocks)
	case c.Workload != WorkloadConversation && c.Workload != WorkloadCold:
		return fmt.Errorf("compare: Workload %q, want %s or %s", c.Workload, WorkloadConversation, WorkloadCold)
	case c.WorkloadRequests < 0:
		return fmt.Errorf("compare: WorkloadRequests = %d, want >= 0", c.WorkloadRequests)
	case c.TracePath == "" && c.Workload == WorkloadConversation:
		return fmt.Errorf("compare: TracePath is empty")
	case c.Sample < 1:
		return fmt.Errorf("compare: Sample = %d, want >= 1", c.Sample)
	case c.MaxInflightPerPod < 0:
		return fmt.Errorf("compare: MaxInflightPerPod = %d, want >= 0", c.MaxInflightPerPod)
	case c.AffinityLookahead < 0:
		return fmt.Errorf("compare: AffinityLookahead = %d, want >= 0", c.AffinityLookahead)
	case c.MaxRequests < 0:
		return fmt.Errorf("compare: MaxRequests = %d, want >= 0", c.MaxRequests)
	case !(c.TimeScale >= 0) || c.TimeScale > 1e6:
		return fmt.Errorf("compare: TimeScale = %v, want in [0, 1e6]", c.TimeScale)
	case c.Concurrency < 0:
		return fmt.Errorf("compare: Concurrency = %d, want >= 0", c.Concurrency)
	case c.MaxTokensCap < 0:
		return fmt.Errorf("compare: MaxTokensCap = %d, want >= 0", c.MaxTokensCap)
	case c.Timeout <= 0:
		return fmt.Errorf("compare: Timeout = %v, want > 0", c.Timeout)
	case !(c.Bypass >= 0 && c.Bypass < 1):
		return fmt.Errorf("compare: Bypass = %v, want in [0, 1)", c.Bypass)
	case c.Bypass > 0 && (c.BypassPods < 1 || c.BypassPods > c.Pods):
		return fmt.Errorf("compare: BypassPods = %d, want 1..Pods (%d)", c.BypassPods, c.Pods)
	case len(c.Modes) == 0:
		return fmt.Errorf("compare: Modes is empty, want some of %v", ModeNames)
	case c.Pods < 1 || c.Pods > enginesim.MaxFleetPods:
		return fmt.Errorf("compare: Pods = %d, want 1..%d", c.Pods, enginesim.MaxFleetPods)
	case c.BlocksPerPod < 1:
		return fmt.Errorf("compare: BlocksPerPod = %d, want >= 1", c.BlocksPerPod)
	case c.MaxRunning < 1:
		return fmt.Errorf("compare: MaxRunning = %d, want >= 1", c.MaxRunning)
	case c.PrefillPerToken < 0 || c.DecodePerToken < 0:
		return fmt.Errorf("compare: PrefillPerToken = %v, DecodePerToken = %v, want >= 0", c.PrefillPerToken, c.DecodePerToken)
	case c.Model == "":
		return fmt.Errorf("compare: Model is empty")
	}
	for _, m := range c.Modes {
		if _, ok := modes[m]; !ok {
			return fmt.Errorf("compare: Modes has %q, want some of %v or %s", m, ModeNames, ModeKVEngine)
		}
	}
	return nil
}
