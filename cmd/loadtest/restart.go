package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/restartbench"
)

// runRestart is the "restart" subcommand: flags into a restartbench.Config,
// then restartbench.Run, which runs this binary again as its child
// processes (--child load|replay).
func runRestart(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("restart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := restartbench.DefaultConfig()
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	tracePath := fs.String("trace", d.TracePath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	maxReq := fs.Int("max-requests", d.MaxRequests, "use only the first N requests (0 = all)")
	pods := fs.Int("pods", d.Pods, "engine pods, 1..256")
	bpp := fs.Int("blocks-per-pod", d.BlocksPerPod, "each engine's KV cache size in blocks")
	blockSize := fs.Int("block-size", d.BlockSize, "engine and router block size in tokens (divides 512)")
	model := fs.String("model", d.Model, "model name of the events")
	seed := fs.Uint64("seed", d.Seed, "seed of the assignment of requests to pods")
	runs := fs.Int("runs", d.Runs, "measurements of each way (medians reported)")
	dir := fs.String("dir", "", "directory for the snapshot and the event log (empty: a temporary one, removed at the end)")
	timeout := fs.Duration("child-timeout", d.ChildTimeout, "longest run of one child process")
	child := fs.String("child", "", "internal: run as a child process in this mode (load or replay) on --file")
	file := fs.String("file", "", "internal: the child's snapshot or event log")
	if help, err := parseFlags("restart", fs, args); help || err != nil {
		return err
	}
	cfg := d
	cfg.MaxRequests, cfg.Pods, cfg.BlocksPerPod, cfg.BlockSize, cfg.Model, cfg.Seed = *maxReq, *pods, *bpp, *blockSize, *model, *seed
	cfg.Runs, cfg.Dir, cfg.ChildTimeout = *runs, *dir, *timeout
	if *child != "" {
		res, err := restartbench.RunChild(ctx, cfg, *child, *file)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(res)
	}
	found, err := locateTrace("restart", *tracePath)
	if err != nil {
		return err
	}
	cfg.TracePath = found
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg.Child = func(mode, path string) *exec.Cmd {
		return exec.Command(exe, "restart", "--child", mode, "--file", path,
			"--pods", strconv.Itoa(cfg.Pods), "--blocks-per-pod", strconv.Itoa(cfg.BlocksPerPod),
			"--block-size", strconv.Itoa(cfg.BlockSize), "--model", cfg.Model)
	}
	if !*quiet {
		start := time.Now()
		cfg.Progress = func(format string, a ...any) {
			fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
		}
	}
	rep, err := restartbench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return rep.WriteTable(stdout)
}
