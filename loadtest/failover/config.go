package failover

import (
	"fmt"
	"io"
	"time"
)

// The faults, in the order the suite injects them.
const (
	FaultKillCellReplica = "kill-cell-replica"
	FaultKillGlobald     = "kill-globald"
	FaultKillPod         = "kill-pod"
	FaultTermCellReplica = "term-cell-replica"
	// FaultFreezeCellReplica stops a cell replica with SIGSTOP for
	// Config.FreezeFor, then resumes it with SIGCONT: a frozen process
	// keeps its sockets open and answers nothing.
	FaultFreezeCellReplica = "freeze-cell-replica"
	// FaultFreezePod stops an engine pod with SIGSTOP the same way.
	FaultFreezePod = "freeze-pod"
	// FaultEventFlood floods the KV events of the last cell's first pod
	// into the cell's ZMQ bind sockets from a hostile publisher (Config.FloodBlocks distinct blocks)
	// and measures what the other pods keep in the index.
	FaultEventFlood = "event-flood"
)

// AllFaults lists every fault in injection order.
var AllFaults = []string{FaultKillCellReplica, FaultKillGlobald, FaultKillPod, FaultTermCellReplica,
	FaultFreezeCellReplica, FaultFreezePod, FaultEventFlood}

// Config configures the suite. Start from DefaultConfig.
type Config struct {
	// BinDir holds prebuilt celld, globald and loadtest binaries; empty
	// builds them with `go build` into a temporary directory.
	BinDir string
	// Trace is the Mooncake trace file to replay.
	Trace string
	// Cells, ReplicasPerCell, PodsPerCell and Globals shape the fleet.
	Cells, ReplicasPerCell, PodsPerCell, Globals int
	// Rate speeds the trace up (2: twice its arrival rate).
	Rate float64
	// Concurrency bounds the requests in flight.
	Concurrency int
	// MaxTokens caps each request's output tokens (the trace's lengths
	// otherwise).
	MaxTokens int
	// PodBlocks is each simulated pod's KV cache, in blocks.
	PodBlocks int
	// PodTimeScale scales the pods' modelled prefill and decode times.
	PodTimeScale float64
	// Warmup is the replay time before the first fault.
	Warmup time.Duration
	// Window is the time after each fault over which it is measured (the
	// issue's minute; shorter by default so the suite suits CI).
	Window time.Duration
	// Gap separates the end of a fault's window from the next fault.
	Gap time.Duration
	// RestartAfter is how long after its fault a process is restarted.
	RestartAfter time.Duration
	// Faults are the faults to inject, a subset of AllFaults in any order.
	Faults []string
	// FreezeFor is how long a freeze fault keeps its process stopped.
	FreezeFor time.Duration
	// StallGap is the wait between two events of a stream past which the
	// stream counts as stalled.
	StallGap time.Duration
	// FloodBlocks is how many distinct blocks the event flood publishes
	// for its pod.
	FloodBlocks int
	// IndexMaxBlocks is every cell's index.max_blocks (500,000 in the
	// issue's fleet, so that a flood of FloodBlocks can fill it).
	IndexMaxBlocks int
	// ProbeInterval, ProbeTimeout and SuspicionMult tune memberlist's
	// failure detection in every celld and globald.
	ProbeInterval, ProbeTimeout time.Duration
	SuspicionMult               int
	// RequestTimeout bounds one request.
	RequestTimeout time.Duration
	// StartTimeout bounds the start of a fleet and each readiness wait.
	StartTimeout time.Duration
	// NoBaseline skips the run without faults (cached_ratio_baseline is
	// then 0).
	NoBaseline bool
	// Progress receives progress lines (nil: none).
	Progress io.Writer
}

// DefaultConfig is a CI-sized run: 10 s windows, 15 s of warm-up.
func DefaultConfig() Config {
	return Config{
		Cells: 2, ReplicasPerCell: 2, PodsPerCell: 2, Globals: 2,
		Rate: 4, Concurrency: 32, MaxTokens: 32,
		PodBlocks: 65536, PodTimeScale: 1,
		Warmup: 15 * time.Second, Window: 10 * time.Second, Gap: 3 * time.Second, RestartAfter: 3 * time.Second,
		Faults:    append([]string(nil), AllFaults...),
		FreezeFor: 5 * time.Second, StallGap: 2 * time.Second, FloodBlocks: 600_000, IndexMaxBlocks: 500_000,
		ProbeInterval: 200 * time.Millisecond, ProbeTimeout: 100 * time.Millisecond, SuspicionMult: 2,
		RequestTimeout: 60 * time.Second, StartTimeout: 60 * time.Second,
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Trace == "":
		return fmt.Errorf("failover: Trace is empty")
	case c.Cells < 1 || c.Cells > 8:
		return fmt.Errorf("failover: Cells = %d, want 1..8", c.Cells)
	case c.ReplicasPerCell < 2 || c.ReplicasPerCell > 4:
		return fmt.Errorf("failover: ReplicasPerCell = %d, want 2..4 (a replica is killed)", c.ReplicasPerCell)
	case c.PodsPerCell < 2 || c.PodsPerCell > 16:
		return fmt.Errorf("failover: PodsPerCell = %d, want 2..16 (a pod is killed)", c.PodsPerCell)
	case c.Globals < 2 || c.Globals > 4:
		return fmt.Errorf("failover: Globals = %d, want 2..4 (a globald is killed)", c.Globals)
	case c.Rate <= 0:
		return fmt.Errorf("failover: Rate = %v, want > 0", c.Rate)
	case c.Concurrency < 1:
		return fmt.Errorf("failover: Concurrency = %d, want >= 1", c.Concurrency)
	case c.PodBlocks < 16:
		return fmt.Errorf("failover: PodBlocks = %d, want >= 16", c.PodBlocks)
	case c.PodTimeScale < 0:
		return fmt.Errorf("failover: PodTimeScale = %v, want >= 0", c.PodTimeScale)
	case c.Warmup <= 0 || c.Window <= 0 || c.Gap < 0:
		return fmt.Errorf("failover: Warmup %v, Window %v and Gap %v: want positive, positive, non-negative", c.Warmup, c.Window, c.Gap)
	case c.RestartAfter <= 0 || c.RestartAfter >= c.Window:
		return fmt.Errorf("failover: RestartAfter = %v, want in (0, Window %v)", c.RestartAfter, c.Window)
	case c.FreezeFor <= 0 || c.FreezeFor >= c.Window:
		return fmt.Errorf("failover: FreezeFor = %v, want in (0, Window %v)", c.FreezeFor, c.Window)
	case c.StallGap <= 0:
		return fmt.Errorf("failover: StallGap = %v, want > 0", c.StallGap)
	case c.FloodBlocks < 1:
		return fmt.Errorf("failover: FloodBlocks = %d, want >= 1", c.FloodBlocks)
	case c.IndexMaxBlocks < 1:
		return fmt.Errorf("failover: IndexMaxBlocks = %d, want >= 1", c.IndexMaxBlocks)
	case len(c.Faults) == 0:
		return fmt.Errorf("failover: no faults")
	case c.ProbeInterval <= 0 || c.ProbeTimeout <= 0 || c.ProbeTimeout >= c.ProbeInterval || c.SuspicionMult < 1:
		return fmt.Errorf("failover: probe interval %v, timeout %v, suspicion mult %d: want timeout < interval, mult >= 1",
			c.ProbeInterval, c.ProbeTimeout, c.SuspicionMult)
	case c.RequestTimeout <= 0 || c.StartTimeout <= 0:
		return fmt.Errorf("failover: RequestTimeout and StartTimeout must be positive")
	}
	for _, f := range c.Faults {
		known := false
		for _, k := range AllFaults {
			known = known || f == k
		}
		if !known {
			return fmt.Errorf("failover: unknown fault %q (want one of %v)", f, AllFaults)
		}
	}
	return nil
}

// Duration is how long one run replays: the warm-up, then each fault's
// window and gap.
func (c Config) Duration() time.Duration {
	return c.Warmup + time.Duration(len(c.Faults))*(c.Window+c.Gap)
}

// faultAt is when fault k is injected, from the start of the replay.
func (c Config) faultAt(k int) time.Duration {
	return c.Warmup + time.Duration(k)*(c.Window+c.Gap)
}
