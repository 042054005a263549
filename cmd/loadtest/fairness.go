package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cellrouter/cellrouter/loadtest/fairness"
)

// runFairness is the "fairness" subcommand: tenants replaying the trace
// through a saturated cell, flow control on and off (package
// loadtest/fairness).
func runFairness(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fairness", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := fairness.DefaultConfig()
	tracePath := fs.String("trace", d.TracePath, "Mooncake trace (JSON Lines)")
	records := fs.Int("records", d.Records, "trace records read; tenants replay disjoint slices of them")
	maxIn := fs.Int("max-input-tokens", d.MaxInputTokens, "cap of each prompt, in tokens (whole 512-token trace blocks)")
	maxOut := fs.Int("max-output-tokens", d.MaxOutputTokens, "cap of each output, in tokens")
	duration := fs.Duration("duration", d.Duration, "how long each of the five phases sends")
	quietLoad := fs.Float64("quiet-load", d.QuietLoad, "the quiet tenant's rate, as a fraction of its share of the capacity")
	noisy := fs.Float64("noisy-factor", d.NoisyFactor, "the noisy tenant's rate, in multiples of its share")
	wA := fs.Float64("share-weight-a", d.ShareWeights[0], "weight of the shares phase's first tenant")
	wB := fs.Float64("share-weight-b", d.ShareWeights[1], "weight of the shares phase's second tenant")
	shareF := fs.Float64("share-factor", d.ShareFactor, "each shares tenant's rate, in multiples of the capacity")
	prioF := fs.Float64("priority-factor", d.PriorityFactor, "each priority tenant's rate, in multiples of the capacity")
	prioWait := fs.Duration("priority-max-wait", d.PriorityMaxWait, "the priority tenants' queue deadline (max_queue_wait)")
	maxWait := fs.Duration("max-queue-wait", d.MaxQueueWait, "the other tenants' queue deadline")
	headroom := fs.Float64("headroom", d.Headroom, "the cell's flow_control.headroom with flow control on; a mixed_no_headroom phase runs beside it at 0 (0: skipped)")
	pods := fs.Int("pods", d.Pods, "simulated pods")
	running := fs.Int("max-running", d.MaxRunning, "requests a pod runs at once (its running batch)")
	blocks := fs.Int("blocks-per-pod", d.BlocksPerPod, "each pod's KV cache in blocks")
	prefill := fs.Duration("prefill-per-token", d.PrefillPerToken, "modelled prefill time per uncached prompt token")
	decode := fs.Duration("decode-per-token", d.DecodePerToken, "modelled time per output token")
	asJSON := fs.Bool("json", false, "print one JSON object")
	quiet := fs.Bool("quiet", false, "no progress on stderr")
	if help, err := parseFlags("fairness", fs, args); help || err != nil {
		return err
	}
	cfg := d
	cfg.TracePath, cfg.Records, cfg.MaxInputTokens, cfg.MaxOutputTokens, cfg.Duration = *tracePath, *records, *maxIn, *maxOut, *duration
	cfg.QuietLoad, cfg.NoisyFactor, cfg.ShareWeights, cfg.ShareFactor = *quietLoad, *noisy, [2]float64{*wA, *wB}, *shareF
	cfg.PriorityFactor, cfg.PriorityMaxWait, cfg.MaxQueueWait, cfg.Headroom = *prioF, *prioWait, *maxWait, *headroom
	cfg.Pods, cfg.MaxRunning, cfg.BlocksPerPod, cfg.PrefillPerToken, cfg.DecodePerToken = *pods, *running, *blocks, *prefill, *decode
	if err := cfg.Validate(); err != nil {
		return err
	}
	var progress io.Writer
	if !*quiet {
		progress = stderr
	}
	rep, err := fairness.Run(ctx, cfg, progress)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	fmt.Fprintf(stdout, "capacity %.1f req/s (%d pods x %d running); quiet %.1f req/s, noisy %.1f req/s (%.0fx its share)\n",
		rep.CapacityRPS, rep.Pods, rep.MaxRunning, rep.QuietRPS, rep.NoisyRPS, rep.NoisyFactor)
	fmt.Fprintf(stdout, "quiet_p99_ratio %.2f (target <= 1.25), share_error_max %.3f (<= 0.10), critical_shed_while_sheddable_queued %d (0), reuse_loss_vs_off %.3f (<= 0.02)\n\n",
		rep.QuietP99Ratio, rep.ShareErrorMax, rep.CriticalShedWhileSheddableQueued, rep.ReuseLossVsOff)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tflow\ttenant\tband\tweight\treq/s\tsent\tserved\tshed\terrors\tTTFT p50 ms\tTTFT p99 ms\ttoken share\tweight share\t")
	if rep.MixedNoHeadroom != nil {
		fmt.Fprintf(stdout, "without headroom: quiet_p99_ratio %.2f, quiet_p50_ratio %.2f; noisy served %.2f of its tokens without it\n\n",
			rep.QuietP99RatioNoHeadroom, rep.QuietP50RatioNoHeadroom, rep.NoisyServedVsNoHeadroom)
	}
	for _, p := range []*fairness.Phase{rep.Solo, rep.Mixed, rep.MixedNoHeadroom, rep.MixedOff, rep.Shares, rep.Priority} {
		if p == nil {
			continue
		}
		for _, t := range p.Tenants {
			fmt.Fprintf(tw, "%s\t%v\t%s\t%s\t%g\t%.1f\t%d\t%d\t%d\t%d\t%.0f\t%.0f\t%.3f\t%.3f\t\n", p.Name, p.FlowControl, t.Name, t.Priority,
				t.Weight, t.RPS, t.Requests, t.Served, t.Shed, t.Errors, t.TTFTP50Ms, t.TTFTP99Ms, t.TokenShare, t.WeightShare)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "wall time %.1f s\n", rep.WallS)
	return err
}
