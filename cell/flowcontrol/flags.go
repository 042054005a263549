package flowcontrol

import "flag"

// BindFlags registers the flow_control section's flags on fs and returns
// a function that copies the flags set on the command line into a Config
// (a configuration file's values stand otherwise). Call it after
// fs.Parse.
func BindFlags(fs *flag.FlagSet) func(*Config) {
	d := DefaultConfig()
	v := d
	fs.BoolVar(&v.Enabled, "flow-control", d.Enabled, "override flow_control.enabled: hold requests whose pods are saturated in a fair, prioritised queue (false: send at once)")
	fs.IntVar(&v.MaxQueued, "flow-max-queued", d.MaxQueued, "override flow_control.max_queued: most requests waiting; past it the lowest band is shed (429)")
	fs.DurationVar(&v.DefaultDeadline, "flow-default-deadline", d.DefaultDeadline, "override flow_control.default_deadline: longest wait in the queue before 429")
	fs.IntVar(&v.QueueDepthThreshold, "flow-queue-depth-threshold", d.QueueDepthThreshold, "override flow_control.queue_depth_threshold: a pod whose engine has this many requests waiting is saturated (0: off)")
	fs.Float64Var(&v.ActiveBlocksThreshold, "flow-active-blocks-threshold", d.ActiveBlocksThreshold, "override flow_control.active_blocks_threshold: a pod whose active KV blocks reach this fraction of its capacity is saturated (0: off)")
	fs.IntVar(&v.MaxInflightPerPod, "flow-max-inflight-per-pod", d.MaxInflightPerPod, "override flow_control.max_inflight_per_pod: a pod with this many of the router's requests in flight is saturated (0: off)")
	fs.DurationVar(&v.RecheckInterval, "flow-recheck-interval", d.RecheckInterval, "override flow_control.recheck_interval: how often waiting requests look at the pods' load again")
	fs.Float64Var(&v.Headroom, "flow-headroom", d.Headroom, "override flow_control.headroom: fraction of each pod's limits kept for tenants under their share and higher bands (0: off)")
	fs.DurationVar(&v.ActiveWindow, "flow-active-window", d.ActiveWindow, "override flow_control.active_window: how long after its last request a tenant still has headroom kept for it")
	fs.IntVar(&v.OutputTokensEstimate, "flow-output-tokens-estimate", d.OutputTokensEstimate, "override flow_control.output_tokens_estimate: output tokens charged at dispatch to a request without max_tokens")
	fs.IntVar(&v.AffinityLookahead, "flow-affinity-lookahead", d.AffinityLookahead, "override flow_control.affinity_lookahead: waiting requests of a tenant a freed pod is offered to, the one it costs the least prefix first (1: FIFO)")
	fs.IntVar(&v.AffinityMaxPasses, "flow-affinity-max-passes", d.AffinityMaxPasses, "override flow_control.affinity_max_passes: most times a waiting request is passed over for cache affinity (0: never)")
	fs.BoolVar(&v.AffinityWait, "flow-affinity-wait", d.AffinityWait, "override flow_control.affinity_wait: a request whose pick is saturated waits for it at most the prefill a detour would cost (false: any pod with room at once)")
	fs.IntVar(&v.EngineMaxRunning, "flow-engine-max-running", d.EngineMaxRunning, "override flow_control.engine_max_running: requests one engine runs at once (vLLM's max_num_seqs; 0: unknown); known, the cell estimates each engine's queue and KV use from its own requests")
	return func(dst *Config) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "flow-control":
				dst.Enabled = v.Enabled
			case "flow-max-queued":
				dst.MaxQueued = v.MaxQueued
			case "flow-default-deadline":
				dst.DefaultDeadline = v.DefaultDeadline
			case "flow-queue-depth-threshold":
				dst.QueueDepthThreshold = v.QueueDepthThreshold
			case "flow-active-blocks-threshold":
				dst.ActiveBlocksThreshold = v.ActiveBlocksThreshold
			case "flow-max-inflight-per-pod":
				dst.MaxInflightPerPod = v.MaxInflightPerPod
			case "flow-recheck-interval":
				dst.RecheckInterval = v.RecheckInterval
			case "flow-headroom":
				dst.Headroom = v.Headroom
			case "flow-active-window":
				dst.ActiveWindow = v.ActiveWindow
			case "flow-output-tokens-estimate":
				dst.OutputTokensEstimate = v.OutputTokensEstimate
			case "flow-affinity-lookahead":
				dst.AffinityLookahead = v.AffinityLookahead
			case "flow-affinity-max-passes":
				dst.AffinityMaxPasses = v.AffinityMaxPasses
			case "flow-affinity-wait":
				dst.AffinityWait = v.AffinityWait
			case "flow-engine-max-running":
				dst.EngineMaxRunning = v.EngineMaxRunning
			}
		})
	}
}
