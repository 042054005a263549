package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/indexbench"
)

// runIndex is the "index" subcommand: flags into an indexbench.Config, then
// indexbench.Run, then the report as JSON or as a table.
func runIndex(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("index", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := indexbench.DefaultConfig()
	quick := fs.Bool("quick", false, "a short run (first 2000 requests, 0.5s windows, at most 6 steps) for a smoke test; explicit flags still apply")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	tracePath := fs.String("trace", d.TracePath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	maxReq := fs.Int("max-requests", d.MaxRequests, "replay only the first N requests (0 = all)")
	workers := fs.Int("workers", d.Workers, "engine workers (index pods), 1..256")
	seed := fs.Uint64("seed", d.Seed, "seed of the random split of requests across workers")
	blockSize := fs.Int("block-size", d.BlockSize, "engine KV block size in tokens (must divide 512)")
	bpw := fs.Int("blocks-per-worker", d.BlocksPerWorker, "KV cache budget of each worker, in blocks")
	expected := fs.Int("expected-blocks", d.ExpectedBlocks, "capacity hint both indexers are built with (tables and map pre-sized): 0 = workers * blocks-per-worker, as celld sizes its index from the pods' kv_blocks; -1 = none, grow from empty")
	window := fs.Duration("window", d.Window, "longest wall time of one sweep step")
	steps := fs.Int("steps", d.Steps, "most sweep steps per indexer")
	perDecade := fs.Int("steps-per-decade", d.StepsPerDecade, "sweep steps per decade of rate (log step size)")
	startFactor := fs.Float64("start-factor", d.StartFactor, "first sweep rate as a multiple of the unpaced pilot's rate")
	refine := fs.Int("refine", d.Refine, "extra steps bisecting between the first passing rate and the failing one above it")
	appliers := fs.Int("appliers", d.Appliers, "event applier goroutines (0 = GOMAXPROCS)")
	queriers := fs.Int("queriers", d.Queriers, "query goroutines")
	maxBatch := fs.Int("max-batch-ops", d.MaxBatchOps, "most ops per Apply call (whole events)")
	minRatio := fs.Float64("min-ratio", d.MinRatio, "achieved/offered ratio a step must reach")
	maxBacklog := fs.Float64("max-backlog", d.MaxBacklog, "largest queued fraction at the end of the window for a valid run")
	verify := fs.Bool("verify", d.Verify, "check every query against the engine model and between indexers before timing")
	baseline := fs.Bool("baseline", d.Baseline, "also benchmark the naive baseline indexer")
	learner := fs.Bool("learner", d.Learner, "attach an idle learner to cell/index, as celld does (exact writes take its slot locks)")
	layout := fs.String("layout", "block", "cell/index storage layout: block, paged, or both (side by side in one run, block first)")
	if help, err := parseFlags("index", fs, args); help || err != nil {
		return err
	}
	cfg := d
	if *quick {
		cfg = indexbench.QuickConfig()
	}
	apply := explicitly(fs)
	apply("trace", func() { cfg.TracePath = *tracePath })
	apply("max-requests", func() { cfg.MaxRequests = *maxReq })
	apply("workers", func() { cfg.Workers = *workers })
	apply("seed", func() { cfg.Seed = *seed })
	apply("block-size", func() { cfg.BlockSize = *blockSize })
	apply("blocks-per-worker", func() { cfg.BlocksPerWorker = *bpw })
	apply("expected-blocks", func() { cfg.ExpectedBlocks = *expected })
	apply("window", func() { cfg.Window = *window })
	apply("steps", func() { cfg.Steps = *steps })
	apply("steps-per-decade", func() { cfg.StepsPerDecade = *perDecade })
	apply("start-factor", func() { cfg.StartFactor = *startFactor })
	apply("refine", func() { cfg.Refine = *refine })
	apply("appliers", func() { cfg.Appliers = *appliers })
	apply("queriers", func() { cfg.Queriers = *queriers })
	apply("max-batch-ops", func() { cfg.MaxBatchOps = *maxBatch })
	apply("min-ratio", func() { cfg.MinRatio = *minRatio })
	apply("max-backlog", func() { cfg.MaxBacklog = *maxBacklog })
	apply("verify", func() { cfg.Verify = *verify })
	apply("baseline", func() { cfg.Baseline = *baseline })
	apply("learner", func() { cfg.Learner = *learner })
	apply("layout", func() { cfg.Layout = *layout })
	tracePathFound, err := locateTrace("index", cfg.TracePath)
	if err != nil {
		return err
	}
	cfg.TracePath = tracePathFound
	if !*quiet {
		start := time.Now()
		cfg.Progress = func(format string, a ...any) {
			fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
		}
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	rep, err := indexbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	return rep.WriteTable(stdout)
}
