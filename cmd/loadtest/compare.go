package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cellrouter/cellrouter/loadtest/compare"
)

// runCompare is the "compare" subcommand: one trace slice replayed through
// a cell against a simulated fleet under random, round-robin and
// cache-aware routing, the last with and without speculative entries and
// on a fleet without KV events (package loadtest/compare).
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	quick := fs.Bool("quick", false, "a short run (one conversation in 40, faster time scale; about 25 s per mode); explicit flags still apply")
	asJSON := fs.Bool("json", false, "print the comparison as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	out := fs.String("out", "", "directory for report.json, SVG plots and index.html (none when empty)")
	d := compare.DefaultConfig()
	wl := fs.String("workload", d.Workload, "conversation (the trace) or cold (generated conversations with no shared prefix, more than half the requests cold; see loadtest/workload)")
	wlRequests := fs.Int("workload-requests", d.WorkloadRequests, "cold workload: requests generated before sampling (0: about the trace's)")
	seed := fs.Uint64("seed", d.Seed, "cold workload: generator seed")
	tracePath := fs.String("trace", d.TracePath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	sample := fs.Int("sample", d.Sample, "keep one conversation in N (1 = the whole trace)")
	maxReq := fs.Int("max-requests", d.MaxRequests, "cap the slice at N requests after sampling (0 = no cap)")
	timeScale := fs.Float64("time-scale", d.TimeScale, "multiply the trace's arrival times")
	pods := fs.Int("pods", d.Pods, "simulated pods")
	blocks := fs.Int("blocks-per-pod", d.BlocksPerPod, "each pod's KV cache in blocks")
	prefill := fs.Duration("prefill-per-token", d.PrefillPerToken, "modelled prefill time per uncached prompt token")
	decode := fs.Duration("decode-per-token", d.DecodePerToken, "modelled time per output token")
	running := fs.Int("max-running", d.MaxRunning, "requests a pod runs at once (the rest queue)")
	maxTok := fs.Int("max-tokens-cap", d.MaxTokensCap, "cap each request's output tokens")
	modes := fs.String("modes", strings.Join(d.Modes, ","), "routing modes to run, comma-separated")
	overlap := fs.Float64("kv-overlap-weight", d.KVOverlapWeight, "kv mode: weight of a block to prefill against a block of decode load")
	kvCap := fs.Int("kv-max-requests", d.KVMaxRequests, "kv mode: per-pod concurrency cap (soft filter); 0 for the plain default profile")
	specTTL := fs.Duration("speculative-ttl", d.SpeculativeTTL, "kv mode: speculative entries' lifetime (kv-nospec runs without them)")
	specWeight := fs.Float64("speculative-weight", d.SpeculativeWeight, "kv mode: what a speculative block counts for in the cost, in [0, 1]")
	cost := fs.String("cost", d.Cost, "cache-aware modes' cost model (routing.cost.model): ttft (queue wait + prefill, from the engine model above) or blocks (the reference router's)")
	prefixWait := fs.Bool("prefix-wait", d.PrefixWait, "cache-aware modes: hold a request sent to a pod still prefilling part of its prefix until that prefill ends (routing.prefix_wait.enabled)")
	flowControl := fs.Bool("flow-control", d.FlowControl, "the cell's flow control (flow_control.enabled) in every mode")
	affinity := fs.Int("affinity-lookahead", d.AffinityLookahead, "flow control's cache affinity (flow_control.affinity_lookahead): waiting requests a freed pod is offered to, the one it costs the least prefix first (1: first come, first served)")
	affWait := fs.Bool("affinity-wait", d.AffinityWait, "flow control's affinity wait (flow_control.affinity_wait): a request whose pick is saturated waits for it at most the prefill a detour would cost (false: any pod with room at once)")
	inflight := fs.Int("max-inflight-per-pod", d.MaxInflightPerPod, "flow control's cap on the router's requests in flight per pod (flow_control.max_inflight_per_pod; 0: off)")
	rates := fs.String("rate", "", "sweep: comma-separated arrival-rate multipliers (time scale / rate each), e.g. 1,2,3,5; reports per rate kv against round-robin, kv-nospec and approx")
	repeat := fs.Int("repeat", 1, "sweep: run each rate N times (every mode of a run beside the others) and judge the median of each figure over the runs; the JSON keeps every run")
	sweepLimit := fs.Float64("sweep-limit-ms", compare.DefaultSweepLimitMs, "sweep: stop after the first rate where round-robin's TTFT p90 from arrival (what its users wait, the generator's concurrency cap included) reaches this (0: run every rate)")
	bypass := fs.Float64("bypass", d.Bypass, "share of requests sent straight to pods around the cell, in [0, 1); with no -modes, runs kv against kv-engine (the engines' load metrics)")
	bypassPods := fs.Int("bypass-pods", d.BypassPods, "the bypassed requests go to the first N pods")
	if help, err := parseFlags("compare", fs, args); help || err != nil {
		return err
	}
	cfg := d
	if *quick {
		cfg = compare.QuickConfig()
	}
	apply := explicitly(fs)
	apply("workload", func() { cfg.Workload = *wl })
	apply("workload-requests", func() { cfg.WorkloadRequests = *wlRequests })
	apply("seed", func() { cfg.Seed = *seed })
	apply("trace", func() { cfg.TracePath = *tracePath })
	apply("sample", func() { cfg.Sample = *sample })
	apply("max-requests", func() { cfg.MaxRequests = *maxReq })
	apply("time-scale", func() { cfg.TimeScale = *timeScale })
	apply("pods", func() { cfg.Pods = *pods })
	apply("blocks-per-pod", func() { cfg.BlocksPerPod = *blocks })
	apply("prefill-per-token", func() { cfg.PrefillPerToken = *prefill })
	apply("decode-per-token", func() { cfg.DecodePerToken = *decode })
	apply("max-running", func() { cfg.MaxRunning = *running })
	apply("max-tokens-cap", func() { cfg.MaxTokensCap = *maxTok })
	apply("kv-overlap-weight", func() { cfg.KVOverlapWeight = *overlap })
	apply("kv-max-requests", func() { cfg.KVMaxRequests = *kvCap })
	apply("speculative-ttl", func() { cfg.SpeculativeTTL = *specTTL })
	apply("speculative-weight", func() { cfg.SpeculativeWeight = *specWeight })
	apply("cost", func() { cfg.Cost = *cost })
	apply("prefix-wait", func() { cfg.PrefixWait = *prefixWait })
	apply("flow-control", func() { cfg.FlowControl = *flowControl })
	apply("affinity-lookahead", func() { cfg.AffinityLookahead = *affinity })
	apply("affinity-wait", func() { cfg.AffinityWait = *affWait })
	apply("max-inflight-per-pod", func() { cfg.MaxInflightPerPod = *inflight })
	apply("bypass", func() { cfg.Bypass = *bypass })
	apply("bypass-pods", func() { cfg.BypassPods = *bypassPods })
	if cfg.Bypass > 0 {
		cfg.Modes = []string{compare.ModeKV, compare.ModeKVEngine}
	}
	apply("modes", func() { cfg.Modes = strings.Split(*modes, ",") })
	if cfg.Workload == compare.WorkloadConversation { // the cold workload is generated: no trace to find
		tracePathFound, err := locateTrace("compare", cfg.TracePath)
		if err != nil {
			return err
		}
		cfg.TracePath = tracePathFound
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	var opt compare.Options
	if !*quiet {
		opt.Progress = stderr
	}
	if err := checkRepeat(*repeat, *rates); err != nil {
		return err
	}
	if *rates != "" {
		rs, err := parseRates(*rates)
		if err != nil {
			return err
		}
		sw, err := compare.RunSweep(ctx, cfg, compare.SweepConfig{Rates: rs, LimitMs: *sweepLimit, Repeat: *repeat}, opt)
		if err != nil {
			return err
		}
		return writeSweep(sw, *out, *asJSON, *quiet, stdout, stderr)
	}
	rep, err := compare.Run(ctx, cfg, opt)
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if *out != "" {
		if err := rep.WriteDir(*out); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, "report.json"), append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("compare: %v", err)
		}
		if !*quiet {
			fmt.Fprintf(stderr, "report written to %s/index.html\n", *out)
		}
	}
	if *asJSON {
		_, err := fmt.Fprintf(stdout, "%s\n", data)
		return err
	}
	return rep.WriteTable(stdout)
}

// checkRepeat refuses a --repeat below 1, and one above 1 without the
// --rate sweep it repeats.
func checkRepeat(repeat int, rates string) error {
	if repeat < 1 {
		return fmt.Errorf("compare: -repeat %d, want at least 1", repeat)
	}
	if repeat > 1 && rates == "" {
		return fmt.Errorf("compare: -repeat %d repeats a -rate sweep; give -rate (e.g. -rate 1)", repeat)
	}
	return nil
}

// parseRates reads --rate: comma-separated positive multipliers.
func parseRates(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) {
			return nil, fmt.Errorf("compare: -rate %q: %q is not a positive number", s, f)
		}
		out = append(out, r)
	}
	return out, nil
}

// writeSweep prints a rate sweep as JSON or a table and, with out, writes
// report.json (the sweep) and each rate's plots under out/rate-xR (its
// further runs' under out/rate-xR/run-N).
func writeSweep(sw *compare.Sweep, out string, asJSON, quiet bool, stdout, stderr io.Writer) error {
	data, err := json.MarshalIndent(sw, "", "  ")
	if err != nil {
		return err
	}
	if out != "" {
		for _, p := range sw.Points {
			dir := filepath.Join(out, fmt.Sprintf("rate-x%g", p.Rate))
			if err := p.Report.WriteDir(dir); err != nil {
				return err
			}
			for i, r := range p.Repeats {
				if err := r.WriteDir(filepath.Join(dir, fmt.Sprintf("run-%d", i+2))); err != nil {
					return err
				}
			}
		}
		if err := os.WriteFile(filepath.Join(out, "report.json"), append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("compare: %v", err)
		}
		if !quiet {
			fmt.Fprintf(stderr, "sweep written to %s (report.json, rate-x*/index.html, rate-x*/run-*/ with -repeat)\n", out)
		}
	}
	if asJSON {
		_, err := fmt.Fprintf(stdout, "%s\n", data)
		return err
	}
	for _, p := range sw.Points {
		fmt.Fprintf(stdout, "== rate x%g (time scale %g, %.1f requests/s)\n", p.Rate, p.TimeScale, p.RequestsPerS)
		if err := p.Report.WriteTable(stdout); err != nil {
			return err
		}
		fmt.Fprintln(stdout)
	}
	return sw.WriteTable(stdout)
}
