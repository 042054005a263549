package flowcontrol

import (
	"fmt"
	"time"
)

// Config is a cell's flow control (the cell's flow_control section).
type Config struct {
	// Enabled turns flow control on: requests whose pods are saturated
	// wait in the queue instead of piling onto the engines. Off, every
	// request goes to its pod at once (the behaviour before flow control).
	Enabled bool `yaml:"enabled"`
	// MaxQueued bounds the requests waiting, all bands together; past it
	// the lowest band's request is shed (429).
	MaxQueued int `yaml:"max_queued"`
	// DefaultDeadline is how long a request may wait when neither its
	// tenant (max_queue_wait) nor its client (a shorter timeout) says
	// less; past it the answer is 429 with Retry-After.
	DefaultDeadline time.Duration `yaml:"default_deadline"`
	// QueueDepthThreshold saturates a pod whose engine reports at least
	// this many requests waiting (vllm:num_requests_waiting); 0 turns the
	// test off.
	QueueDepthThreshold int `yaml:"queue_depth_threshold"`
	// ActiveBlocksThreshold saturates a pod whose active KV blocks (the
	// router's own count, corrected by the engine's, as a fraction of its
	// KV capacity) reach this fraction; 0 turns the test off.
	ActiveBlocksThreshold float64 `yaml:"active_blocks_threshold"`
	// MaxInflightPerPod saturates a pod with this many of the router's
	// requests in flight, for pods whose capacity and queue the cell does
	// not know; 0 turns the test off.
	MaxInflightPerPod int `yaml:"max_inflight_per_pod"`
	// RecheckInterval is how often the queue looks at the pods' load again
	// while requests wait, besides whenever a request ends: the engines'
	// metrics change between requests.
	RecheckInterval time.Duration `yaml:"recheck_interval"`
	// Headroom is the fraction of each pod's limits (the thresholds
	// above) kept free for the requests that need it: while another
	// active tenant of its band is under its share, or a higher band is
	// active, a request of a tenant at or over its share is admitted only
	// to a pod below its limits less this fraction, so a quiet tenant's
	// request finds a slot instead of waiting for a noisy one's to end.
	// 0 turns it off (work-conserving: anyone may fill every slot).
	Headroom float64 `yaml:"headroom"`
	// ActiveWindow is how long after its last request a tenant (or a
	// band) still counts as active, so that headroom is kept for it
	// between its requests.
	ActiveWindow time.Duration `yaml:"active_window"`
	// OutputTokensEstimate is the output tokens a request is charged at
	// dispatch when it sets no max_tokens; its real usage replaces the
	// estimate when it ends.
	OutputTokensEstimate int `yaml:"output_tokens_estimate"`
	// AffinityLookahead is how many of a tenant's waiting requests the
	// queue looks at when a pod frees up: of them it dispatches the one
	// that pod (or the first pod of its decision with room) costs the
	// least prefix, in blocks to prefill again beyond what its pick holds
	// (Request.Detours), the earliest on a tie; 0 or 1 is plain FIFO
	// within a tenant. The tenants' fair shares do not change.
	AffinityLookahead int `yaml:"affinity_lookahead"`
	// AffinityMaxPasses bounds how often a waiting request may be passed
	// over for cache affinity (a later request of its tenant dispatched
	// first while it could have gone): after that many, it goes first to
	// any pod with room. A bound in dispatches, not time, keeps affinity
	// when the queue is long, which is when the prefill it saves matters
	// most, while no request waits more than that many extra dispatches.
	// 0: never passed over.
	AffinityMaxPasses int `yaml:"affinity_max_passes"`
	// AffinityWait lets a request whose pick is saturated wait for it
	// instead of going at once to a pod with room that lacks part of its
	// prefix: a pod is open to it only once it has waited as long as
	// that pod's detour would take to prefill (Request.Detours x
	// PrefillPerBlock), the ski-rental rule. Its pick, and every pod
	// holding all its pick holds, are open at once; a request whose
	// prefix nobody holds never waits for affinity. Off, any pod with
	// room takes it at once.
	AffinityWait bool `yaml:"affinity_wait"`
	// PrefillPerBlock is what prefilling one block costs an engine: the
	// time a detour of one block is worth to AffinityWait. The cell sets
	// it from routing.cost (block_size x prefill_per_token_us); 0 turns
	// the wait off.
	PrefillPerBlock time.Duration `yaml:"-"`
	// EngineMaxRunning is the requests one engine runs at once (vLLM's
	// max_num_seqs), 0 when unknown. Known, and while a pod's engine
	// metrics are not fresh, the cell judges the engine from its own
	// requests: those beyond EngineMaxRunning wait in the engine's queue
	// (against QueueDepthThreshold) and hold no KV blocks, so only the
	// running share of the router's blocks counts against
	// ActiveBlocksThreshold. Unknown, every routed block counts as held,
	// which saturates a pod serving long prompts while its engine still
	// has free slots.
	EngineMaxRunning int `yaml:"engine_max_running"`
}

// DefaultConfig returns the defaults: flow control on, 1024 queued
// requests, a 30 s deadline, a pod saturated at 8 waiting requests or 95%
// of its KV blocks, checked again every 20 ms, a quarter of each limit
// kept as headroom for tenants under their share (active for 10 s after
// their last request), and a freed pod given to the waiting request, of
// a tenant's first 32, that it costs the least prefix (passing a request over at most 32
// times), a request waiting for its saturated pick at most the prefill a
// detour would cost it, and the engines' running batch unknown.
func DefaultConfig() Config {
	return Config{
		Enabled:               true,
		MaxQueued:             1024,
		DefaultDeadline:       30 * time.Second,
		QueueDepthThreshold:   8,
		ActiveBlocksThreshold: 0.95,
		RecheckInterval:       20 * time.Millisecond,
		Headroom:              0.25,
		ActiveWindow:          10 * time.Second,
		OutputTokensEstimate:  256,
		AffinityLookahead:     32,
		AffinityMaxPasses:     32,
		AffinityWait:          true,
	}
}

// Validate checks every field and names the first bad one.
func (c Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: flow_control.%s = %v: %s", ErrConfig, field, v, want)
	}
	switch {
	case c.MaxQueued < 1:
		return bad("max_queued", c.MaxQueued, "want at least 1")
	case c.DefaultDeadline <= 0:
		return bad("default_deadline", c.DefaultDeadline, "want over 0")
	case c.QueueDepthThreshold < 0:
		return bad("queue_depth_threshold", c.QueueDepthThreshold, "want 0 (off) or more")
	case c.ActiveBlocksThreshold < 0 || c.ActiveBlocksThreshold > 1 || c.ActiveBlocksThreshold != c.ActiveBlocksThreshold:
		return bad("active_blocks_threshold", c.ActiveBlocksThreshold, "want 0 (off) to 1")
	case c.MaxInflightPerPod < 0:
		return bad("max_inflight_per_pod", c.MaxInflightPerPod, "want 0 (off) or more")
	case c.RecheckInterval <= 0:
		return bad("recheck_interval", c.RecheckInterval, "want over 0")
	case c.Headroom < 0 || c.Headroom >= 1 || c.Headroom != c.Headroom:
		return bad("headroom", c.Headroom, "want 0 (off) to under 1")
	case c.Headroom > 0 && c.ActiveWindow <= 0:
		return bad("active_window", c.ActiveWindow, "want over 0 with headroom")
	case c.OutputTokensEstimate < 0:
		return bad("output_tokens_estimate", c.OutputTokensEstimate, "want 0 or more")
	case c.AffinityLookahead < 0:
		return bad("affinity_lookahead", c.AffinityLookahead, "want 0 or more (0 or 1: FIFO within a tenant)")
	case c.AffinityMaxPasses < 0:
		return bad("affinity_max_passes", c.AffinityMaxPasses, "want 0 or more")
	case c.PrefillPerBlock < 0:
		return bad("prefill_per_block", c.PrefillPerBlock, "want 0 (off) or more")
	case c.EngineMaxRunning < 0:
		return bad("engine_max_running", c.EngineMaxRunning, "want 0 (unknown) or more")
	}
	return nil
}
