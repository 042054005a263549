package overhead

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// RampStep is one rate of a tier's ramp: requests sent open loop at Rate
// per second for Config.RampStep (latency counted from each request's
// scheduled send time, so a tier that falls behind shows it), beside a
// reference stream to the pod directly at a quarter of the rate.
type RampStep struct {
	Rate     float64 `json:"rate"`
	Achieved float64 `json:"achieved"`
	Tier     Side    `json:"tier"`
	Pod      Side    `json:"pod"`
	// AddedP99Ms is the tier's p99 minus the reference stream's (for the
	// pod tier, its own p99).
	AddedP99Ms float64 `json:"added_p99_ms"`
	// Dropped counts requests not sent because MaxInFlight were pending;
	// Errors failed requests.
	Dropped int `json:"dropped"`
	Errors  int `json:"errors"`
	// FirstError is the first failed request's error.
	FirstError string `json:"first_error,omitempty"`
	// CPUUsPerRequest is the process CPU (user and system) per completed
	// request of the step, in microseconds.
	CPUUsPerRequest float64 `json:"cpu_us_per_request"`
	Sustained       bool    `json:"sustained"`
}

// CPUCost is the process CPU per request, in microseconds, at
// Config.CPURate, by tier (the median of cpuRounds runs of Config.CPUStep) (everything in the process: clients, pods and
// routers), and the routers' share: the cell's (cell minus pod), the
// global tier's (global minus cell) and both (global minus pod). The pod
// path's figure is the client's and the pod's own cost.
type CPUCost struct {
	Rate     float64            `json:"rate"`
	ByTierUs map[string]float64 `json:"by_tier_us"`
	CellUs   float64            `json:"cell_us"`
	GlobalUs float64            `json:"global_us"`
	BothUs   float64            `json:"both_us"`
	// ProbeUs is what the probe of a lone cell costs (global_probed minus
	// global).
	ProbeUs float64 `json:"probe_us"`
}

// maxInFlight bounds the open-loop sender's pending requests.
const maxInFlight = 512

// openLoop sends n requests to tier at rate per second (and, when ref is
// set, every fourth slot one more to the pod), and returns the step.
func openLoop(ctx context.Context, client *http.Client, b pathBodies, bases map[string]string, tier string, rate float64, n int, ref bool) RampStep {
	var mu sync.Mutex
	var tierLat, podLat []time.Duration
	var tierEnds []time.Time
	var inflight atomic.Int64
	st := RampStep{Rate: rate}
	var wg sync.WaitGroup
	interval := time.Duration(float64(time.Second) / rate)
	cpu0 := processCPU()
	start := time.Now()
	send := func(to string, i int, due time.Time) {
		if inflight.Add(1) > maxInFlight {
			inflight.Add(-1)
			mu.Lock()
			st.Dropped++
			mu.Unlock()
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer inflight.Add(-1)
			_, err := call(ctx, client, bases[to]+b.path, b.bodies[i%len(b.bodies)])
			d := time.Since(due)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				if st.Errors++; st.Errors == 1 {
					st.FirstError = to + ": " + err.Error()
				}
			case to == tier:
				tierLat = append(tierLat, d)
				tierEnds = append(tierEnds, time.Now())
			default:
				podLat = append(podLat, d)
			}
		}()
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		due := start.Add(time.Duration(i) * interval)
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		send(tier, i, due)
		if ref && tier != TierPod && i%4 == 0 {
			send(TierPod, i, due)
		}
	}
	wg.Wait()
	cpu := processCPU() - cpu0
	// Achieved counts what completed within the sending window and a
	// grace of 250 ms: a stuck request shows in the latency, not here.
	window := time.Duration(n) * interval
	inTime := 0
	for _, e := range tierEnds {
		if e.Sub(start) <= window+250*time.Millisecond {
			inTime++
		}
	}
	if done := len(tierLat) + len(podLat); done > 0 {
		st.CPUUsPerRequest = float64(cpu) / float64(done) / 1e3
	}
	st.Achieved = float64(inTime) / window.Seconds()
	if len(tierLat) > 0 {
		st.Tier = summarize(tierLat)
	}
	st.AddedP99Ms = st.Tier.P99Ms
	if len(podLat) > 0 {
		st.Pod = summarize(podLat)
		st.AddedP99Ms -= st.Pod.P99Ms
	}
	return st
}

// ramp raises each tier's rate through cfg.RampRates. A step is sustained
// when at least 95% of the rate was achieved, no request was dropped or
// failed, and the added p99 stayed within twice the first step's (floored
// at 0.1 ms, below which a loaded machine's noise would end every ramp at
// once). The ramp goes on while the throughput holds (95%, nothing dropped
// or failed), so it also finds the peak; it returns every tier's steps,
// its highest rate sustained with every lower one (max_rps), and the
// highest rate it achieved (peak_rps).
func ramp(ctx context.Context, client *http.Client, cfg Config, b pathBodies, bases map[string]string) (steps map[string][]RampStep, best, peak map[string]float64) {
	steps, best, peak = map[string][]RampStep{}, map[string]float64{}, map[string]float64{}
	for _, tier := range pathTiers {
		base := 0.0
		held := true
		for k, rate := range cfg.RampRates {
			n := max(1, int(rate*cfg.RampStep.Seconds()))
			st := openLoop(ctx, client, b, bases, tier, rate, n, true)
			if k == 0 {
				base = max(st.AddedP99Ms, 0.1)
			}
			throughput := st.Achieved >= 0.95*rate && st.Dropped == 0 && st.Errors == 0
			st.Sustained = throughput && st.AddedP99Ms <= 2*base
			steps[tier] = append(steps[tier], st)
			if held = held && st.Sustained; held {
				best[tier] = rate
			}
			if st.Errors == 0 {
				peak[tier] = max(peak[tier], st.Achieved)
			}
			if !throughput || ctx.Err() != nil {
				break
			}
		}
	}
	return steps, best, peak
}

// cpuRounds is how many times each tier's CPU is measured, in turn; the
// report takes each tier's median, as the process's CPU time on a loaded
// machine swings with the scheduler's spinning from one second to the next.
const cpuRounds = 5

// cpuCost sends cfg.CPUStep of requests to each tier at cfg.CPURate,
// cpuRounds times in turn, and reports each tier's median process CPU per
// request.
func cpuCost(ctx context.Context, client *http.Client, cfg Config, b pathBodies, bases map[string]string) CPUCost {
	c := CPUCost{Rate: cfg.CPURate, ByTierUs: map[string]float64{}}
	per := map[string][]float64{}
	n := max(10, int(cfg.CPURate*cfg.CPUStep.Seconds()))
	for r := 0; r < cpuRounds; r++ {
		for _, tier := range pathTiers {
			st := openLoop(ctx, client, b, bases, tier, cfg.CPURate, n, false)
			per[tier] = append(per[tier], st.CPUUsPerRequest)
		}
	}
	for tier, xs := range per {
		sort.Float64s(xs)
		c.ByTierUs[tier] = xs[len(xs)/2]
	}
	c.CellUs = c.ByTierUs[TierCell] - c.ByTierUs[TierPod]
	c.GlobalUs = c.ByTierUs[TierGlobal] - c.ByTierUs[TierCell]
	c.BothUs = c.ByTierUs[TierGlobal] - c.ByTierUs[TierPod]
	c.ProbeUs = c.ByTierUs[TierGlobalProbed] - c.ByTierUs[TierGlobal]
	return c
}

// processCPU is the process's user plus system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
