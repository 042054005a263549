package ingestbench

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// TargetBlockEventsPerS is the throughput the ingest path must sustain.
const TargetBlockEventsPerS = 1e6

// Report is the result of Run. Its top-level rates and lags are those of
// the main phase: the saturation run, or the paced run when Config.Rate is
// set. Paced holds the paced run that follows a saturation run.
type Report struct {
	BlockEventsPerS float64 `json:"block_events_per_s"`
	BatchesPerS     float64 `json:"batches_per_s"`
	LagP50Ms        float64 `json:"lag_p50_ms"`
	LagP99Ms        float64 `json:"lag_p99_ms"`
	Messages        uint64  `json:"messages"`
	DecodeErrors    uint64  `json:"decode_errors"`
	Gaps            uint64  `json:"gaps"`
	Replays         uint64  `json:"replays"`
	Pods            int     `json:"pods"`
	DurationS       float64 `json:"duration_s"`
	// Valid says every phase applied every batch, lost nothing and, when
	// verified, matched the reference index.
	Valid bool `json:"valid"`
	// MeetsTarget says the main phase reached TargetBlockEventsPerS.
	MeetsTarget bool `json:"meets_target"`

	// Main is the main phase in full; Paced the paced phase, if run.
	Main  *Phase `json:"main"`
	Paced *Phase `json:"paced,omitempty"`

	Workload WorkloadStats `json:"workload"`
	Setup    Setup         `json:"setup"`
}

// WorkloadStats describes the generated event stream.
type WorkloadStats struct {
	Requests           int     `json:"requests"`
	Batches            int64   `json:"batches"`
	StoredEvents       int64   `json:"stored_events"`
	RemovedEvents      int64   `json:"removed_events"`
	StoredBlocks       int64   `json:"stored_blocks"`
	RemovedBlocks      int64   `json:"removed_blocks"`
	BlockEvents        int64   `json:"block_events"`
	BlocksPerBatch     float64 `json:"blocks_per_batch"`
	EventsPerBatch     float64 `json:"events_per_batch"`
	PayloadBytes       int64   `json:"payload_bytes"`
	BytesPerBlockEvent float64 `json:"bytes_per_block_event"`
	BuildS             float64 `json:"build_s"`
}

// Setup echoes the settings that shape the numbers.
type Setup struct {
	Trace            string `json:"trace"`
	Form             string `json:"form"`
	EngineBlockSize  int    `json:"engine_block_size"`
	RouterBlockSize  int    `json:"router_block_size"`
	BlocksPerPod     int    `json:"blocks_per_pod"`
	StepTokens       int    `json:"step_tokens"`
	RemovalsPerChunk bool   `json:"removals_per_chunk"`
	GOMAXPROCS       int    `json:"gomaxprocs"`
	NumCPU           int    `json:"num_cpu"`
	GoVersion        string `json:"go_version"`
}

// Run builds the workload from the trace and runs it over loopback ZMQ:
// at saturation and then paced at PacedFraction of the saturation rate, or
// once at Rate when it is set.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		return nil, fmt.Errorf("ingestbench: %w", err)
	}
	t0 := time.Now()
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		return nil, err
	}
	rep := &Report{Pods: cfg.Pods, Workload: statsOf(w, time.Since(t0)), Setup: setupOf(cfg)}
	cfg.progress("workload: %d requests, %d pods, %d batches, %d block events (%.0f per batch), %.1f MB encoded, built in %.1fs",
		w.Requests, cfg.Pods, w.Batches, w.BlockEvents(), rep.Workload.BlocksPerBatch, float64(w.PayloadBytes)/1e6, rep.Workload.BuildS)
	var ref []podEntry
	if cfg.Verify {
		ref, _, err = referenceApply(ctx, cfg, w)
		if err != nil {
			return nil, err
		}
		cfg.progress("reference: %d blocks indexed by a direct apply", len(ref))
	}
	if cfg.Rate > 0 {
		if rep.Main, err = runPhase(ctx, cfg, w, "paced", cfg.Rate, ref); err != nil {
			return nil, err
		}
	} else {
		if rep.Main, err = runPhase(ctx, cfg, w, "saturation", 0, ref); err != nil {
			return nil, err
		}
		if cfg.PacedFraction > 0 {
			rate := cfg.PacedFraction * rep.Main.BlockEventsPerS
			if rep.Paced, err = runPhase(ctx, cfg, w, "paced", rate, ref); err != nil {
				return nil, err
			}
		}
	}
	m := rep.Main
	rep.BlockEventsPerS, rep.BatchesPerS = m.BlockEventsPerS, m.BatchesPerS
	rep.LagP50Ms, rep.LagP99Ms = m.LagP50Ms, m.LagP99Ms
	rep.Messages, rep.DecodeErrors, rep.Gaps, rep.Replays = m.Messages, m.DecodeErrors, m.Gaps, m.Replays
	rep.DurationS = m.DurationS
	rep.Valid = m.Valid && (rep.Paced == nil || rep.Paced.Valid)
	rep.MeetsTarget = m.BlockEventsPerS >= TargetBlockEventsPerS
	return rep, nil
}

// statsOf summarises w.
func statsOf(w *Workload, build time.Duration) WorkloadStats {
	s := WorkloadStats{
		Requests: w.Requests, Batches: w.Batches,
		StoredEvents: w.StoredEvents, RemovedEvents: w.RemovedEvents,
		StoredBlocks: w.StoredBlocks, RemovedBlocks: w.RemovedBlocks,
		BlockEvents: w.BlockEvents(), PayloadBytes: w.PayloadBytes,
		BuildS: build.Seconds(),
	}
	if w.Batches > 0 {
		s.BlocksPerBatch = float64(w.BlockEvents()) / float64(w.Batches)
		s.EventsPerBatch = float64(w.StoredEvents+w.RemovedEvents) / float64(w.Batches)
	}
	if n := w.BlockEvents(); n > 0 {
		s.BytesPerBlockEvent = float64(w.PayloadBytes) / float64(n)
	}
	return s
}

// setupOf echoes cfg's shaping settings and the machine.
func setupOf(cfg Config) Setup {
	form := "array"
	if cfg.Form != 0 {
		form = "map"
	}
	return Setup{
		Trace: cfg.TracePath, Form: form,
		EngineBlockSize: cfg.EngineBlockSize, RouterBlockSize: cfg.RouterBlockSize,
		BlocksPerPod: cfg.BlocksPerPod, StepTokens: cfg.StepTokens, RemovalsPerChunk: cfg.RemovalsPerChunk,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), GoVersion: runtime.Version(),
	}
}
