package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/cellrouter/cellrouter/loadtest/overhead"
)

// runOverhead is the "overhead" subcommand: the cell's added latency
// against calling the pod directly, side by side.
func runOverhead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("overhead", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := overhead.DefaultConfig()
	requests := fs.Int("requests", d.Requests, "measured requests per side and mode")
	warmup := fs.Int("warmup", d.Warmup, "unmeasured requests per side first")
	prompt := fs.Int("prompt-tokens", d.PromptTokens, "token-array prompt length")
	chunks := fs.Int("chunks", d.Chunks, "stream chunks per response")
	pods := fs.Int("pods", d.Pods, "pods behind the cell")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rep, err := overhead.Run(ctx, overhead.Config{Requests: *requests, Warmup: *warmup, PromptTokens: *prompt, Chunks: *chunks, Pods: *pods})
	if err != nil {
		return err
	}
	rep.GoMaxProcs = runtime.GOMAXPROCS(0)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "%d requests per side, %d pods, %d-token prompts (ms)\n", rep.Requests, rep.Pods, rep.PromptTokens)
	fmt.Fprintf(stdout, "%-14s %8s %8s %8s %8s %8s %8s %10s\n", "mode", "dir p50", "dir p99", "cell p50", "cell p99", "+p50", "+p99", "")
	for _, m := range []struct {
		name string
		m    overhead.Mode
	}{{"non-streaming", rep.NonStreaming}, {"streaming", rep.Streaming}} {
		fmt.Fprintf(stdout, "%-14s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", m.name, m.m.Direct.P50Ms, m.m.Direct.P99Ms,
			m.m.Cell.P50Ms, m.m.Cell.P99Ms, m.m.OverheadP50Ms, m.m.OverheadP99Ms)
	}
	return nil
}
