package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/cellrouter/cellrouter/loadtest/burst"
)

// runBurst is the "burst" subcommand: bursts of requests sharing a new
// long prefix through a cell, with and without speculative entries
// (package loadtest/burst).
func runBurst(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("burst", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := burst.DefaultConfig()
	sizes := fs.String("sizes", joinInts(d.Sizes), "burst sizes N, comma-separated")
	window := fs.Duration("window", d.Window, "time over which a burst's requests arrive")
	prefix := fs.Int("prefix-tokens", d.PrefixTokens, "shared prefix length in tokens")
	suffix := fs.Int("suffix-tokens", d.SuffixTokens, "tokens of each request's own after the prefix")
	pods := fs.Int("pods", d.Pods, "simulated pods")
	blocks := fs.Int("blocks-per-pod", d.BlocksPerPod, "each pod's KV cache in blocks")
	prefill := fs.Duration("prefill-per-token", d.PrefillPerToken, "modelled prefill time per uncached prompt token")
	running := fs.Int("max-running", d.MaxRunning, "requests a pod runs at once (the rest queue)")
	overlap := fs.Float64("kv-overlap-weight", d.KVOverlapWeight, "weight of a block to prefill against a block of decode load")
	specTTL := fs.Duration("speculative-ttl", d.SpeculativeTTL, "speculative entries' lifetime in the speculative runs")
	repeat := fs.Int("repeat", d.Repeat, "run every burst this many times (cold fleet each) and report the median run")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if help, err := parseFlags("burst", fs, args); help || err != nil {
		return err
	}
	cfg := d
	cfg.Window, cfg.PrefixTokens, cfg.SuffixTokens, cfg.Pods, cfg.BlocksPerPod = *window, *prefix, *suffix, *pods, *blocks
	cfg.PrefillPerToken, cfg.MaxRunning, cfg.KVOverlapWeight, cfg.SpeculativeTTL = *prefill, *running, *overlap, *specTTL
	cfg.Repeat = *repeat
	cfg.Sizes = nil
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("burst: --sizes: %q is not a number", f)
		}
		cfg.Sizes = append(cfg.Sizes, n)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	var progress io.Writer
	if !*quiet {
		progress = stderr
	}
	rep, err := burst.Run(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "bursts sharing a new %d-token prefix within %.0f ms, %d pods, prefill %.0fµs/token, max %d running, overlap weight %v\n\n",
		rep.PrefixTokens, rep.WindowMs, rep.Pods, rep.PrefillPerTokenUs, rep.MaxRunning, rep.KVOverlapWeight)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "N\tentries\tpods prefilled\tpods used\tprefill tokens\tprefix prefill tokens\tlatency p50 ms\tlatency max ms\terrors\tpods prefilled per run\t")
	for _, b := range rep.Bursts {
		for _, r := range []struct {
			name string
			r    *burst.Result
		}{{"speculative", b.Speculative}, {"exact", b.Exact}} {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%d\t%v\t\n", b.N, r.name, r.r.PodsPrefilled, r.r.PodsUsed,
				r.r.PrefillTokens, r.r.PrefixPrefillTokens, r.r.LatencyP50Ms, r.r.LatencyMaxMs, r.r.Errors, r.r.PodsPrefilledRuns)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wall time %.1f s\n", rep.WallS)
	return err
}

// joinInts formats ns as a comma-separated list.
func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
