package main

import (
	"context"
	"flag"
	"io"
	"strings"

	"github.com/cellrouter/cellrouter/loadtest/failover"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// runFailover is the "failover" subcommand: the failover suite of package
// loadtest/failover over a fleet of real processes.
func runFailover(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := failover.DefaultConfig()
	tracePath := fs.String("trace", trace.DefaultPath, "Mooncake trace to replay (a relative path is also looked for above the working directory)")
	binDir := fs.String("bin-dir", "", "directory with prebuilt celld, globald and loadtest (empty: go build them into a temporary directory)")
	cells := fs.Int("cells", d.Cells, "cells")
	replicas := fs.Int("replicas", d.ReplicasPerCell, "celld replicas per cell")
	pods := fs.Int("pods", d.PodsPerCell, "simulated engine pods per cell (one process each)")
	globals := fs.Int("globals", d.Globals, "globald replicas")
	rate := fs.Float64("rate", d.Rate, "trace speed-up (2: twice the trace's arrival rate)")
	conc := fs.Int("concurrency", d.Concurrency, "requests in flight at most")
	maxTokens := fs.Int("max-tokens", d.MaxTokens, "cap on each request's output tokens (0: the trace's)")
	podBlocks := fs.Int("pod-blocks", d.PodBlocks, "each pod's KV cache in blocks")
	timeScale := fs.Float64("pod-time-scale", d.PodTimeScale, "scales the pods' modelled prefill and decode times")
	warmup := fs.Duration("warmup", d.Warmup, "replay before the first fault")
	window := fs.Duration("window", d.Window, "measurement window after each fault (the issue's minute: 60s)")
	gap := fs.Duration("gap", d.Gap, "time between a window's end and the next fault")
	restart := fs.Duration("restart-after", d.RestartAfter, "restart a faulted process this long after its fault")
	faults := fs.String("faults", strings.Join(d.Faults, ","), "faults in order, from "+strings.Join(failover.AllFaults, ", "))
	freezeFor := fs.Duration("freeze-for", d.FreezeFor, "how long a freeze fault keeps its process stopped (SIGSTOP, then SIGCONT)")
	stallGap := fs.Duration("stall-gap", d.StallGap, "a stream with no event for this long counts as stalled")
	floodBlocks := fs.Int("flood-blocks", d.FloodBlocks, "distinct blocks the event flood publishes for its pod")
	maxBlocks := fs.Int("index-max-blocks", d.IndexMaxBlocks, "every cell's index.max_blocks")
	probe := fs.Duration("gossip-probe-interval", d.ProbeInterval, "memberlist probe interval of every celld and globald")
	probeTimeout := fs.Duration("gossip-probe-timeout", d.ProbeTimeout, "memberlist probe timeout")
	suspicion := fs.Int("gossip-suspicion-mult", d.SuspicionMult, "memberlist suspicion multiplier")
	noBaseline := fs.Bool("no-baseline", false, "skip the run without faults")
	asJSON := fs.Bool("json", false, "print one JSON object with a faults array")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if help, err := parseFlags("failover", fs, args); help || err != nil {
		return err
	}
	cfg := d
	cfg.Trace, cfg.BinDir = *tracePath, *binDir
	cfg.Cells, cfg.ReplicasPerCell, cfg.PodsPerCell, cfg.Globals = *cells, *replicas, *pods, *globals
	cfg.Rate, cfg.Concurrency, cfg.MaxTokens, cfg.PodBlocks, cfg.PodTimeScale = *rate, *conc, *maxTokens, *podBlocks, *timeScale
	cfg.Warmup, cfg.Window, cfg.Gap, cfg.RestartAfter = *warmup, *window, *gap, *restart
	cfg.Faults = nil
	for _, f := range strings.Split(*faults, ",") {
		if f = strings.TrimSpace(f); f != "" {
			cfg.Faults = append(cfg.Faults, f)
		}
	}
	cfg.ProbeInterval, cfg.ProbeTimeout, cfg.SuspicionMult = *probe, *probeTimeout, *suspicion
	cfg.FreezeFor, cfg.StallGap, cfg.FloodBlocks, cfg.IndexMaxBlocks = *freezeFor, *stallGap, *floodBlocks, *maxBlocks
	cfg.NoBaseline = *noBaseline
	if !*quiet {
		cfg.Progress = stderr
	}
	rep, err := failover.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	return rep.WriteTable(stdout)
}
