package fairness

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
)

// Run runs the phases of cfg and returns the report. progress, if
// not nil, gets a line per phase.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	ps, err := loadPrompts(cfg)
	if err != nil {
		return nil, err
	}
	capRPS := capacity(cfg, ps)
	n := len(ps)
	quiet := &tenant{name: "quiet", priority: auth.PriorityStandard, weight: 1, maxWait: cfg.MaxQueueWait, offset: 0}
	noisy := &tenant{name: "noisy", priority: auth.PriorityStandard, weight: 1, maxWait: cfg.MaxQueueWait, offset: n / 4}
	quiet.rate = cfg.QuietLoad * capRPS / 2
	noisy.rate = cfg.NoisyFactor * capRPS / 2
	shareA := &tenant{name: "share-a", priority: auth.PriorityStandard, weight: cfg.ShareWeights[0], maxWait: cfg.MaxQueueWait,
		offset: n / 2, rate: cfg.ShareFactor * capRPS}
	shareB := &tenant{name: "share-b", priority: auth.PriorityStandard, weight: cfg.ShareWeights[1], maxWait: cfg.MaxQueueWait,
		offset: 5 * n / 8, rate: cfg.ShareFactor * capRPS}
	crit := &tenant{name: "critical", priority: auth.PriorityCritical, weight: 1, maxWait: cfg.PriorityMaxWait,
		offset: 3 * n / 4, rate: cfg.PriorityFactor * capRPS}
	shed := &tenant{name: "sheddable", priority: auth.PrioritySheddable, weight: 1, maxWait: cfg.PriorityMaxWait,
		offset: 7 * n / 8, rate: cfg.PriorityFactor * capRPS}
	all := []*tenant{quiet, noisy, shareA, shareB, crit, shed}
	dir, err := os.MkdirTemp("", "fairness-keys-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	keys := filepath.Join(dir, "keys.yaml")
	if err := os.WriteFile(keys, keyFile(all), 0o600); err != nil {
		return nil, err
	}
	rep := &Report{CapacityRPS: capRPS, Pods: cfg.Pods, MaxRunning: cfg.MaxRunning, DurationS: cfg.Duration.Seconds(),
		QuietRPS: quiet.rate, NoisyRPS: noisy.rate, NoisyFactor: cfg.NoisyFactor}
	type phase struct {
		name     string
		flow     bool
		headroom float64
		tenants  []*tenant
		dst      **Phase
	}
	h := cfg.Headroom
	phases := []phase{
		{"solo", true, h, []*tenant{quiet}, &rep.Solo},
		{"mixed", true, h, []*tenant{quiet, noisy}, &rep.Mixed},
		{"mixed_off", false, 0, []*tenant{quiet, noisy}, &rep.MixedOff},
		{"shares", true, h, []*tenant{shareA, shareB}, &rep.Shares},
		{"priority", true, h, []*tenant{crit, shed}, &rep.Priority},
	}
	if h > 0 {
		phases = slices.Insert(phases, 2, phase{"mixed_no_headroom", true, 0, []*tenant{quiet, noisy}, &rep.MixedNoHeadroom})
	}
	var mixed []outcome
	for _, ph := range phases {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		outs, err := runPhase(ctx, cfg, keys, ph.flow, ph.headroom, ph.tenants, ps)
		if err != nil {
			return nil, fmt.Errorf("fairness: phase %s: %w", ph.name, err)
		}
		*ph.dst = summarise(ph.name, ph.flow, ph.tenants, outs, cfg.Duration)
		(*ph.dst).Headroom = ph.headroom
		switch ph.name {
		case "mixed":
			mixed = outs
		case "mixed_off":
			rep.ReuseLossVsOff, rep.ReuseCompared = reuseLoss(mixed, outs)
		}
		if progress != nil {
			p := *ph.dst
			fmt.Fprintf(progress, "fairness: %s (flow control %v): %d requests, %d served, %d shed, %d errors\n",
				ph.name, ph.flow, p.Requests, p.Served, p.Shed, p.Errors)
		}
	}
	rep.finish()
	rep.WallS = time.Since(start).Seconds()
	return rep, nil
}

// runPhase starts a fresh fleet and cell (flow control on or off), sends
// each tenant's traffic for cfg.Duration and returns every outcome.
func runPhase(ctx context.Context, cfg Config, keys string, flow bool, headroom float64, ts []*tenant, ps []prompt) ([]outcome, error) {
	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	pc := enginesim.DefaultConfig()
	pc.ID, pc.Model, pc.BlockSize, pc.Blocks = "pod", cfg.Model, cfg.BlockSize, cfg.BlocksPerPod
	pc.PrefillPerToken, pc.DecodePerToken, pc.MaxRunning, pc.TimeScale, pc.Logger = cfg.PrefillPerToken, cfg.DecodePerToken, cfg.MaxRunning, 1, discard
	fleet, err := enginesim.StartFleet(enginesim.FleetConfig{Pods: cfg.Pods, Pod: pc})
	if err != nil {
		return nil, err
	}
	defer fleet.Close()
	cc := cell.DefaultConfig()
	cc.CellID = "fairness"
	cc.HTTPAddr, cc.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cc.Events.BlockSize = cfg.BlockSize
	cc.HealthInterval = time.Second
	cc.Routing.RequestTimeout = cfg.Timeout
	cc.Auth.KeyFile = keys
	fc := &cc.FlowControl
	fc.Enabled, fc.Headroom = flow, headroom
	// A pod is saturated when its running batch is full: what waits then
	// waits in the cell's queue, in fair order, not in the engine's FIFO.
	fc.MaxInflightPerPod, fc.QueueDepthThreshold, fc.ActiveBlocksThreshold = cfg.MaxRunning, 0, 0
	fc.DefaultDeadline = cfg.MaxQueueWait
	for _, p := range fleet.Pods() {
		cc.Pods = append(cc.Pods, cell.PodConfig{ID: p.ID(), Address: p.HTTPAddr(), ZMQEndpoint: p.ZMQEndpoint(),
			ReplayEndpoint: p.ReplayEndpoint(), KVBlocks: cfg.BlocksPerPod})
	}
	c, err := cell.New(cc, discard)
	if err != nil {
		return nil, err
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	defer func() { stop(); <-done }()
	base := "http://" + c.HTTPAddr()
	cl := &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	defer cl.CloseIdleConnections()
	if err := waitReady(ctx, cl, base); err != nil {
		return nil, err
	}
	url := base + "/v1/completions"
	var mu sync.Mutex
	var outs []outcome
	var wg sync.WaitGroup
	start := time.Now().Add(50 * time.Millisecond)
	for _, t := range ts {
		count := int(t.rate * cfg.Duration.Seconds())
		step := time.Duration(float64(time.Second) / t.rate)
		for i := range count {
			at := start.Add(time.Duration(i) * step)
			p := ps[(t.offset+i)%len(ps)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				select { // open loop: the arrival schedule, not synchronisation
				case <-time.After(time.Until(at)):
				case <-ctx.Done():
					return
				}
				o := send(ctx, cl, url, t.key(), t.name, body(cfg.Model, p))
				o.idx = i
				mu.Lock()
				outs = append(outs, o)
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return outs, ctx.Err()
}

// waitReady polls the cell's /readyz until it answers 200 (its pods are
// known), for at most a minute.
func waitReady(ctx context.Context, cl *http.Client, base string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/readyz", nil)
		if err != nil {
			return err
		}
		if resp, err := cl.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("fairness: the cell at %s was not ready within a minute", base)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
