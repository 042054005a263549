package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/report"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// runRun is the "run" subcommand: it replays a Mooncake trace against an
// OpenAI endpoint (package loadtest/replay) and writes a summary, and with
// --out a report directory (package loadtest/report).
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := replay.DefaultConfig()
	target := fs.String("target", "", "base URL of the OpenAI endpoint, e.g. http://127.0.0.1:8080 (required)")
	tracePath := fs.String("trace", trace.DefaultPath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	model := fs.String("model", "", "model field of the requests (default: the first model the target's GET /v1/models lists)")
	timeScale := fs.Float64("time-scale", d.TimeScale, "multiply the trace's arrival times (0.1 = ten times denser)")
	rate := fs.Float64("rate", d.Rate, "multiply the arrival rate (2 = twice the requests per second)")
	conc := fs.Int("concurrency", d.Concurrency, "most requests in flight (0 = no cap); requests over it wait and are counted as delayed")
	maxReq := fs.Int("max-requests", 0, "replay only the first N requests (0 = all)")
	stream := fs.Bool("stream", d.Stream, "stream responses (server-sent events)")
	maxTokCap := fs.Int("max-tokens-cap", 0, "cap max_tokens (the trace's output_length) at N (0 = no cap)")
	timeout := fs.Duration("timeout", d.Timeout, "time limit of one request")
	out := fs.String("out", "", "directory for report.json, SVG plots and index.html (none when empty)")
	asJSON := fs.Bool("json", false, "print the summary as one JSON object instead of a table")
	quiet := fs.Bool("quiet", false, "no progress bar on stderr")
	if help, err := parseFlags("run", fs, args); help || err != nil {
		return err
	}
	if *target == "" {
		return errors.New("run: --target is required, e.g. --target http://127.0.0.1:8080")
	}
	if *maxReq < 0 {
		return fmt.Errorf("run: --max-requests = %d, want >= 0", *maxReq)
	}
	cfg := d
	cfg.Target, cfg.Model, cfg.TimeScale, cfg.Rate = *target, *model, *timeScale, *rate
	cfg.Concurrency, cfg.Stream, cfg.MaxTokensCap, cfg.Timeout = *conc, *stream, *maxTokCap, *timeout
	if cfg.Model == "" {
		cfg.Model = d.Model // validated now, asked of the target below
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	path, err := locateTrace("run", *tracePath)
	if err != nil {
		return err
	}
	recs, err := trace.ReadFile(path, *maxReq)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return fmt.Errorf("run: %s holds no requests", path)
	}
	if err := replay.CheckTarget(ctx, cfg.Target, 5*time.Second); err != nil {
		return err
	}
	if *model == "" {
		if cfg.Model, err = replay.FirstModel(ctx, cfg.Target, 10*time.Second); err != nil {
			return fmt.Errorf("run: %w; pass --model NAME", err)
		}
		if !*quiet {
			fmt.Fprintf(stderr, "model %s (the target's first; --model chooses another)\n", cfg.Model)
		}
	}
	var obs replay.Observer
	var bar *replay.Progress
	if !*quiet {
		bar = replay.NewProgress(stderr, len(recs), 500*time.Millisecond)
		obs = bar
		bar.Start()
	}
	res, err := replay.Run(ctx, cfg, recs, obs)
	if bar != nil {
		bar.Stop()
	}
	if err != nil {
		return err
	}
	sum := report.Summarize(res.Results, res.Elapsed)
	sum.Target = cfg.Target
	if *out != "" {
		if err := report.WriteDir(*out, &sum, res.Results); err != nil {
			return err
		}
		if !*quiet {
			fmt.Fprintf(stderr, "report written to %s/%s\n", *out, report.FileIndex)
		}
	}
	if *asJSON {
		return writeJSON(stdout, sum)
	}
	return report.WriteText(stdout, &sum)
}
