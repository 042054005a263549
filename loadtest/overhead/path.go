package overhead

import (
	"context"
	"fmt"
	"net/http"
	"runtime/pprof"
	"sync"
	"time"
)

// The tiers of the whole-path measurement: the pod called directly, the
// cell in front of it, the global tier in front of the cell, and a second
// global tier that probes the cell although it is the only candidate
// (global.Config.ProbeLone), which shows what the probe costs.
const (
	TierPod          = "pod"
	TierCell         = "cell"
	TierGlobal       = "global"
	TierGlobalProbed = "global_probed"
)

// pathTiers lists the tiers in report order.
var pathTiers = []string{TierPod, TierCell, TierGlobal, TierGlobalProbed}

// PathLevel is one concurrency and mode of the whole-path measurement:
// every tier's latency, measured in the same run with the tiers
// interleaved request by request on every client, and what each tier adds.
type PathLevel struct {
	Concurrency  int  `json:"concurrency"`
	Streaming    bool `json:"streaming"`
	Pod          Side `json:"pod"`
	Cell         Side `json:"cell"`
	Global       Side `json:"global"`
	GlobalProbed Side `json:"global_probed"`
	// CellAdded is the cell tier's share (cell minus pod), GlobalAdded the
	// global tier's (global minus cell), BothAdded both tiers together
	// (global minus pod), at p50 and p99; ProbeAdded is what probing the
	// lone cell adds (global_probed minus global).
	CellAdded   Added `json:"cell_added"`
	GlobalAdded Added `json:"global_added"`
	BothAdded   Added `json:"both_added"`
	ProbeAdded  Added `json:"probe_added"`
}

// Added is what a tier adds at p50 and p99, in milliseconds.
type Added struct {
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
}

func added(a, b Side) Added { return Added{P50Ms: a.P50Ms - b.P50Ms, P99Ms: a.P99Ms - b.P99Ms} }

// Path is the whole-path measurement: latency by concurrency, the rate
// ramp and the routers' CPU per request.
type Path struct {
	Levels []PathLevel `json:"levels"`
	// Ramp is each tier's rate ramp (non-streaming), MaxRPS the highest
	// rate each sustained before its added p99 doubled, and PeakRPS the
	// highest rate it achieved (see ramp).
	Ramp    map[string][]RampStep `json:"ramp"`
	MaxRPS  map[string]float64    `json:"max_rps"`
	PeakRPS map[string]float64    `json:"peak_rps"`
	// CPU is the process CPU per request at a fixed rate, by tier, and
	// what each router adds (see CPUCost).
	CPU CPUCost `json:"cpu"`
}

// GlobalSummary is the headline of the whole path: both tiers together
// against the pod directly, non-streaming, at concurrency 1, and the
// highest rate the global tier sustained.
type GlobalSummary struct {
	OverheadP50Ms float64 `json:"overhead_p50_ms"`
	OverheadP99Ms float64 `json:"overhead_p99_ms"`
	MaxRPS        float64 `json:"max_rps"`
	// PeakRPS is the highest rate the global path achieved in its ramp.
	PeakRPS float64 `json:"peak_rps"`
	// CPUUsPerRequest is both routers' CPU per request (the global path's
	// process CPU minus the pod path's), in microseconds.
	CPUUsPerRequest float64 `json:"cpu_us_per_request"`
}

// pathBodies are the request bodies one mode cycles through, built once so
// the client's own work stays small.
type pathBodies struct {
	path   string
	bodies [][]byte
}

func newPathBodies(p *prompts, stream bool, chunks int) pathBodies {
	var b pathBodies
	for i := 0; i < 64; i++ {
		path, body := p.body(PromptTokens, i, chunks, stream)
		b.path = path
		b.bodies = append(b.bodies, body)
	}
	return b
}

// measurePath runs every concurrency level in both modes. At each level
// conc clients send requests in a closed loop, each cycling through the
// tiers one request at a time, so every tier is measured under the same
// load; each tier gets perTier measured requests.
func measurePath(ctx context.Context, client *http.Client, cfg Config, p *prompts, bases map[string]string) ([]PathLevel, error) {
	var out []PathLevel
	for _, stream := range []bool{false, true} {
		chunks := 1
		if stream {
			chunks = cfg.Chunks
		}
		bodies := newPathBodies(p, stream, chunks)
		for _, conc := range cfg.Concurrency {
			lat, err := closedLoop(ctx, client, bodies, bases, conc, cfg.Warmup, cfg.Requests)
			if err != nil {
				return nil, fmt.Errorf("overhead: path, concurrency %d, streaming %v: %w", conc, stream, err)
			}
			l := PathLevel{Concurrency: conc, Streaming: stream, Pod: summarize(lat[TierPod]), Cell: summarize(lat[TierCell]),
				Global: summarize(lat[TierGlobal]), GlobalProbed: summarize(lat[TierGlobalProbed])}
			l.CellAdded, l.GlobalAdded, l.BothAdded = added(l.Cell, l.Pod), added(l.Global, l.Cell), added(l.Global, l.Pod)
			l.ProbeAdded = added(l.GlobalProbed, l.Global)
			out = append(out, l)
		}
	}
	return out, nil
}

// closedLoop sends (warmup+perTier) requests to each tier from conc
// clients, each client taking the tiers in turn, and returns the measured
// latencies by tier.
func closedLoop(ctx context.Context, client *http.Client, b pathBodies, bases map[string]string, conc, warmup, perTier int) (map[string][]time.Duration, error) {
	total := (warmup + perTier) * len(pathTiers)
	var mu sync.Mutex
	lat := map[string][]time.Duration{}
	next := 0 // the next request number, shared by the clients
	var firstErr error
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := i >= total || firstErr != nil
				mu.Unlock()
				if stop {
					return
				}
				tier := pathTiers[i%len(pathTiers)]
				d, err := call(ctx, client, bases[tier]+b.path, b.bodies[(i/len(pathTiers))%len(b.bodies)])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("%s request %d: %w", tier, i, err)
				}
				if err == nil && i >= warmup*len(pathTiers) {
					lat[tier] = append(lat[tier], d)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return lat, firstErr
}

// globalSummary is the report's headline from the path measurement.
func globalSummary(p *Path) *GlobalSummary {
	g := &GlobalSummary{MaxRPS: p.MaxRPS[TierGlobal], PeakRPS: p.PeakRPS[TierGlobal], CPUUsPerRequest: p.CPU.BothUs}
	for _, l := range p.Levels {
		if l.Concurrency == 1 && !l.Streaming {
			g.OverheadP50Ms, g.OverheadP99Ms = l.BothAdded.P50Ms, l.BothAdded.P99Ms
		}
	}
	return g
}

// runPath measures the whole path: the concurrency levels, the ramp and
// the CPU cost, with the client's goroutines labelled "client" and, when
// cfg.CPUProfile is set, a CPU profile of all of it.
func runPath(ctx context.Context, client *http.Client, cfg Config, p *prompts, bases map[string]string) (*Path, error) {
	if cfg.CPUProfile != nil {
		if err := pprof.StartCPUProfile(cfg.CPUProfile); err != nil {
			return nil, fmt.Errorf("overhead: cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	out := &Path{}
	var err error
	pprof.Do(ctx, pprof.Labels("tier", "client"), func(ctx context.Context) {
		if out.Levels, err = measurePath(ctx, client, cfg, p, bases); err != nil {
			return
		}
		b := newPathBodies(p, false, 1)
		out.CPU = cpuCost(ctx, client, cfg, b, bases)
		out.Ramp, out.MaxRPS, out.PeakRPS = ramp(ctx, client, cfg, b, bases)
	})
	return out, err
}

// labelled runs f with the goroutine label tier=name, which every
// goroutine f starts inherits, so a CPU profile tells the tiers apart.
func labelled(name string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("tier", name), func(context.Context) { f() })
}
