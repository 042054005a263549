package compare

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/report"
	"github.com/cellrouter/cellrouter/loadtest/trace"
	"github.com/cellrouter/cellrouter/loadtest/workload"
)

// readyTimeout bounds the wait for a fresh cell and fleet to be connected.
const readyTimeout = 60 * time.Second

// Options are the run's outputs besides the Report.
type Options struct {
	// Progress receives one line per phase and a progress bar per mode;
	// nil is silent.
	Progress io.Writer
}

// Run replays the trace slice cfg describes against a fresh fleet and cell
// in each mode and returns the comparison.
func Run(ctx context.Context, cfg Config, opt Options) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	all, err := records(cfg)
	if err != nil {
		return nil, err
	}
	recs := SampleConversations(all, cfg.Sample)
	if cfg.MaxRequests > 0 && len(recs) > cfg.MaxRequests {
		recs = recs[:cfg.MaxRequests]
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("compare: the slice of %s is empty", workloadName(cfg))
	}
	rep := newReport(cfg, recs)
	reach, err := ReachableReuse(recs, cfg.Model, cfg.BlockSize, cfg.Pods*cfg.BlocksPerPod)
	if err != nil {
		return nil, err
	}
	unbounded, err := ReachableReuse(recs, cfg.Model, cfg.BlockSize, unboundedBlocks(recs, cfg.BlockSize))
	if err != nil {
		return nil, err
	}
	rep.ReachableReuse, rep.UnboundedReuse = reach.Ratio, unbounded.Ratio
	say(opt.Progress, "compare: %s: %d requests (one conversation in %d) over %.0f s of trace, replayed in %.0f s per mode; reachable reuse %.1f%% (unbounded cache %.1f%%)\n",
		workloadName(cfg), len(recs), cfg.Sample, rep.TraceSpanS, rep.TraceSpanS*cfg.TimeScale, 100*reach.Ratio, 100*unbounded.Ratio)
	for _, name := range cfg.Modes {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		say(opt.Progress, "compare: mode %s: %s\n", name, modes[name].about)
		mr, err := runMode(ctx, cfg, recs, name, opt)
		if err != nil {
			return nil, fmt.Errorf("compare: mode %s: %w", name, err)
		}
		rep.Modes[name] = mr
	}
	rep.finish(time.Since(started))
	return rep, nil
}

// unboundedBlocks is a cache size that never evicts for recs.
func unboundedBlocks(recs []trace.Record, blockSize int) int {
	n := 1
	for _, r := range recs {
		n += r.InputLength/blockSize + 1
	}
	return n
}

// runMode starts a cold fleet and a cell routing in mode name, replays recs
// through the cell and stops both.
func runMode(ctx context.Context, cfg Config, recs []trace.Record, name string, opt Options) (*ModeResult, error) {
	fc := fleetConfig(cfg)
	fc.Pod.Events.Disabled = modes[name].noEvents
	fleet, err := enginesim.StartFleet(fc)
	if err != nil {
		return nil, err
	}
	defer fleet.Close()
	c, err := cell.New(cellConfig(cfg, fleet, name), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	defer func() {
		stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}()
	target := "http://" + c.HTTPAddr()
	if err := waitReady(ctx, target, fleet); err != nil {
		return nil, err
	}
	var front *bypassFront
	if cfg.Bypass > 0 {
		var pods []string
		for _, p := range fleet.Pods()[:min(cfg.BypassPods, len(fleet.Pods()))] {
			pods = append(pods, "http://"+p.HTTPAddr())
		}
		if front, err = startBypassFront(target, pods, cfg.Bypass); err != nil {
			return nil, err
		}
		defer front.Close()
		target = front.URL()
	}
	rc := replay.DefaultConfig()
	rc.Target, rc.Model, rc.TimeScale = target, cfg.Model, cfg.TimeScale
	rc.Concurrency, rc.MaxTokensCap, rc.Timeout = cfg.Concurrency, cfg.MaxTokensCap, cfg.Timeout
	var obs replay.Observer
	var bar *replay.Progress
	if opt.Progress != nil {
		bar = replay.NewProgress(opt.Progress, len(recs), 500*time.Millisecond)
		obs = bar
		bar.Start()
	}
	out, err := replay.Run(ctx, rc, recs, obs)
	if bar != nil {
		bar.Stop()
	}
	if err != nil {
		return nil, err
	}
	mr := &ModeResult{Summary: report.Summarize(out.Results, out.Elapsed), Profile: modes[name].profile,
		About: modes[name].about, results: out.Results}
	if front != nil {
		mr.Bypassed = front.bypassed.Load()
	}
	if mr.ReuseLoss, err = reuseLoss(recs, out.Results, cfg.Model, cfg.BlockSize); err != nil {
		return nil, err
	}
	ids := make([]string, 0, cfg.Pods)
	for _, p := range fleet.Pods() {
		ids = append(ids, p.ID())
		st := p.Stats()
		mr.EngineCachedTokens += int64(st.CachedTokens)
		computedBlocks := int64(st.PromptTokens-st.CachedTokens-st.TransferredTokens) / int64(cfg.BlockSize)
		mr.EvictedBlocksEst += max(0, computedBlocks-int64(st.CacheBlocks))
		if st.CacheBlocks >= st.CacheCapacity {
			mr.FullPods++
		}
	}
	mr.AddIdlePods(ids)
	return mr, nil
}

// fleetConfig is the simulated fleet of cfg: pods "pod-0".."pod-N-1" on
// free loopback ports, real-time timing.
func fleetConfig(cfg Config) enginesim.FleetConfig {
	pc := enginesim.DefaultConfig()
	pc.ID = "pod"
	pc.Model = cfg.Model
	pc.BlockSize = cfg.BlockSize
	pc.Blocks = cfg.BlocksPerPod
	pc.PrefillPerToken = cfg.PrefillPerToken
	pc.DecodePerToken = cfg.DecodePerToken
	pc.MaxRunning = cfg.MaxRunning
	pc.TimeScale = 1
	pc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	return enginesim.FleetConfig{Pods: cfg.Pods, Pod: pc}
}

// cellConfig is a cell on free loopback ports that knows every pod of fleet
// and routes with mode name's profile.
func cellConfig(cfg Config, fleet *enginesim.Fleet, name string) cell.Config {
	cc := cell.DefaultConfig()
	cc.CellID = "compare-" + name
	cc.HTTPAddr, cc.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cc.Events.BlockSize = cfg.BlockSize
	cc.HealthInterval = time.Second
	m := modes[name]
	for _, p := range fleet.Pods() {
		pc := cell.PodConfig{ID: p.ID(), Address: p.HTTPAddr(),
			ZMQEndpoint: p.ZMQEndpoint(), ReplayEndpoint: p.ReplayEndpoint(), KVBlocks: cfg.BlocksPerPod}
		if m.noEvents {
			pc.Events = cell.PodEventsNone
		}
		cc.Pods = append(cc.Pods, pc)
	}
	cc.Speculative.TTL, cc.Speculative.Weight = cfg.SpeculativeTTL, cfg.SpeculativeWeight
	if m.noSpec {
		cc.Speculative.TTL = 0
	}
	cc.EngineMetrics.Enabled = m.engineMetrics
	cc.Routing.Profile = m.profile
	for _, n := range ModeNames {
		if c := modes[n].config; c != nil {
			cc.Routing.Profiles = append(cc.Routing.Profiles, *c)
		}
	}
	cc.Routing.RequestTimeout = cfg.Timeout
	cc.Routing.KVOverlapScoreWeight = cfg.KVOverlapWeight
	// The ttft cost is the engines' own timing model: the router is told
	// what a prefilled token and a decoded one cost and how many requests
	// a pod runs at once, as an operator measures them on a real fleet.
	cc.Routing.Cost = cell.CostConfig{Model: cfg.Cost,
		PrefillPerTokenUs: float64(cfg.PrefillPerToken) / float64(time.Microsecond),
		DecodePerTokenMs:  float64(cfg.DecodePerToken) / float64(time.Millisecond),
		DecodeTokens:      float64(cfg.MaxTokensCap), MaxRunning: cfg.MaxRunning}
	cc.Routing.PrefixWait.Enabled = cfg.PrefixWait
	cc.FlowControl.Enabled = cfg.FlowControl
	cc.FlowControl.AffinityLookahead = cfg.AffinityLookahead
	cc.FlowControl.AffinityWait = cfg.AffinityWait
	cc.FlowControl.MaxInflightPerPod = cfg.MaxInflightPerPod
	// The engines' running batch, as an operator who set vLLM's
	// max_num_seqs tells the cell: without engine metrics, flow control
	// judges each engine's queue and KV use from the cell's own requests.
	cc.FlowControl.EngineMaxRunning = cfg.MaxRunning
	if m.cacheAware && cfg.KVMaxRequests > 0 {
		// The cache-aware profile with a per-pod concurrency cap: the
		// default profile plus a soft "concurrency" filter, so a pod whose
		// running batch is full is passed over while another has room
		// (and the decision fails open when none has).
		p := plugins.DefaultProfile("kv-capped", cfg.KVOverlapWeight, 0, 0.95)
		params, err := pipeline.ParamsOf(fmt.Sprintf("max_requests: %d", cfg.KVMaxRequests))
		if err == nil {
			p.Filter = append(p.Filter, pipeline.PluginSpec{Type: "concurrency", Params: params})
		}
		cc.Routing.Profiles = append(cc.Routing.Profiles, p)
		cc.Routing.Profile = p.Name
	}
	return cc
}

// waitReady polls until the cell answers /readyz and every pod has an
// event subscriber, so that no KV event of the replay is lost.
func waitReady(ctx context.Context, target string, fleet *enginesim.Fleet) error {
	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	cl := &http.Client{Timeout: 2 * time.Second}
	for {
		if ready(cl, target, fleet) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cell at %s and fleet not ready after %v", target, readyTimeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// ready reports whether the cell is ready and every pod that publishes
// events has a subscriber.
func ready(cl *http.Client, target string, fleet *enginesim.Fleet) bool {
	for _, p := range fleet.Pods() {
		if p.ZMQEndpoint() != "" && !p.EventsSubscribed() {
			return false
		}
	}
	resp, err := cl.Get(target + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// say writes a progress line when w is not nil.
func say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// workloadName names cfg's workload for progress lines and errors.
func workloadName(cfg Config) string {
	if cfg.Workload == WorkloadCold {
		n := cfg.WorkloadRequests
		if n <= 0 {
			n = workload.ColdRequests
		}
		return fmt.Sprintf("the cold workload (%d requests generated, seed %d)", n, cfg.Seed)
	}
	return cfg.TracePath
}
