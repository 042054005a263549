package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/loadtest/ingestbench"
)

// runIngest is the "ingest" subcommand: flags into an ingestbench.Config,
// then ingestbench.Run, then the report as JSON or as a table.
func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := ingestbench.DefaultConfig()
	quick := fs.Bool("quick", false, "a short run (the trace's first 4000 requests) that stays under a minute; explicit flags still apply")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	tracePath := fs.String("trace", d.TracePath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	maxReq := fs.Int("max-requests", d.MaxRequests, "use only the first N requests (0 = all)")
	seed := fs.Uint64("seed", d.Seed, "seed of the random split of requests across pods")
	pods := fs.Int("pods", d.Pods, "engine pods, one publisher each, 1..256")
	model := fs.String("model", d.Model, "model name in the topics")
	engineBS := fs.Int("engine-block-size", d.EngineBlockSize, "engine KV block size in tokens (must divide 512)")
	routerBS := fs.Int("router-block-size", d.RouterBlockSize, "the cell's block size in tokens")
	bpp := fs.Int("blocks-per-pod", d.BlocksPerPod, "KV cache budget of each engine, in blocks")
	stepTokens := fs.Int("step-tokens", d.StepTokens, "new prompt tokens per engine step (vLLM max_num_batched_tokens): one batch per step")
	perChunk := fs.Bool("removals-per-chunk", d.RemovalsPerChunk, "one BlockRemoved event per request chunk instead of one per evicted block (vLLM)")
	form := fs.String("form", "array", "payload form: array or map")
	rate := fs.Float64("rate", d.Rate, "run once paced at this many block events/s instead of saturation + paced")
	paced := fs.Float64("paced-fraction", d.PacedFraction, "after the saturation run, a run paced at this fraction of its rate (0 = none)")
	verify := fs.Bool("verify", d.Verify, "compare each run's index with a direct apply of the same payloads")
	timeout := fs.Duration("timeout", d.Timeout, "longest wait for the last batch of one run")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	if help, err := parseFlags("ingest", fs, args); help || err != nil {
		return err
	}
	cfg := d
	if *quick {
		cfg = ingestbench.QuickConfig()
	}
	apply := explicitly(fs)
	apply("trace", func() { cfg.TracePath = *tracePath })
	apply("max-requests", func() { cfg.MaxRequests = *maxReq })
	apply("seed", func() { cfg.Seed = *seed })
	apply("pods", func() { cfg.Pods = *pods })
	apply("model", func() { cfg.Model = *model })
	apply("engine-block-size", func() { cfg.EngineBlockSize = *engineBS })
	apply("router-block-size", func() { cfg.RouterBlockSize = *routerBS })
	apply("blocks-per-pod", func() { cfg.BlocksPerPod = *bpp })
	apply("step-tokens", func() { cfg.StepTokens = *stepTokens })
	apply("removals-per-chunk", func() { cfg.RemovalsPerChunk = *perChunk })
	apply("rate", func() { cfg.Rate = *rate })
	apply("paced-fraction", func() { cfg.PacedFraction = *paced })
	apply("verify", func() { cfg.Verify = *verify })
	apply("timeout", func() { cfg.Timeout = *timeout })
	tracePathFound, err := locateTrace("ingest", cfg.TracePath)
	if err != nil {
		return err
	}
	cfg.TracePath = tracePathFound
	switch *form {
	case "array":
		cfg.Form = vllmwire.FormArray
	case "map":
		cfg.Form = vllmwire.FormMap
	default:
		return fmt.Errorf("ingest: -form %q: want array or map", *form)
	}
	if !*quiet {
		start := time.Now()
		cfg.Progress = func(format string, a ...any) {
			fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("ingest: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := ingestbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return rep.WriteTable(stdout)
}
