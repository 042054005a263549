package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"

	"github.com/cellrouter/cellrouter/internal/buildinfo"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// command is one subcommand: it parses its own flags from args and writes
// its result to stdout and its progress to stderr.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is the subcommand table. Add a subcommand by adding a line here
// and a file with its run function.
var commands = map[string]command{
	"overhead": {summary: "what the cell and the global tier add to a request against calling the pod directly, side by side: latency by concurrency, max rate, CPU", run: runOverhead},
	"index":    {summary: "replay a Mooncake trace against cell/index and a naive baseline (threshold throughput, latency, memory)", run: runIndex},

	"enginesim": {summary: "run a fleet of simulated vLLM pods (OpenAI API, /tokenize, /metrics, ZMQ KV events) until Ctrl-C", run: runEnginesim},

	"hierarchy": {summary: "hierarchical routing (summaries, probes, hand-off) against one flat exact index on a trace: prefix reuse, probes, gossip bytes, balance", run: runHierarchy},

	"ingest":    {summary: "publish trace-derived KV events over loopback ZMQ to a subscriber, decoder, applier and index (block events/s, lag)", run: runIngest},
	"eventlog":  {summary: "record the KV events engines publish for a trace into an event log file", run: runEventlog},
	"compare":   {summary: "replay a trace slice through a cell against a simulated fleet: random, round-robin, cache-aware with and without speculative entries, approximate (no events)", run: runCompare},
	"failover":  {summary: "kill and restart cell replicas, a globald and an engine pod of a real multi-process fleet under a trace replay: failed requests, detection, recovery, cache hits", run: runFailover},
	"fairness":  {summary: "tenants replaying a trace through a saturated cell with flow control on and off: quiet tenant's TTFT against solo, token shares against weights, critical work shed, reuse lost", run: runFairness},
	"burst":     {summary: "bursts of requests sharing a new long prefix through a cell, with and without speculative entries: pods that prefill it", run: runBurst},
	"restart":   {summary: "restart to ready with a trace's final index state: loading a snapshot against replaying every event into an empty index (time, peak memory)", run: runRestart},
	"bodyflood": {summary: "start a globald binary with a key file and flood it with large authenticated bodies at once: answers by status, peak and settled RSS", run: runBodyflood},
	"run":       {summary: "replay a Mooncake trace against an OpenAI endpoint (pod, cell, global) and report TTFT, ITL, E2E, cache hits, pod load", run: runRun},

	"discovery": {summary: "a cell following a Kubernetes fleet through a real API server: Ready to routable and to first request, deletion to removal and to last request (p50, p99 over 100 pods)", run: runDiscovery},
}

// errUsage reports a command line that names no known subcommand.
var errUsage = errors.New("usage: loadtest <command> [flags]; run \"loadtest help\" for the commands")

// dispatch runs the subcommand args[0] with the remaining args.
func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return errUsage
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" || name == "-help" {
		usage(stdout)
		return nil
	}
	if name == "version" || name == "--version" || name == "-version" {
		fmt.Fprintln(stdout, buildinfo.Read().String("loadtest"))
		return nil
	}
	cmd, ok := commands[name]
	if !ok {
		usage(stderr)
		return fmt.Errorf("unknown command %q", name)
	}
	if err := cmd.run(ctx, args[1:], stdout, stderr); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil // the subcommand printed its usage
}

// usage lists the subcommands.
func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: loadtest <command> [flags]")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "run \"loadtest <command> -h\" for a command's flags, \"loadtest --version\" for the build")
}

// parseFlags parses a subcommand's args into fs. help is true when they
// asked for --help (fs has printed its usage): the subcommand then stops
// without an error. Positional arguments are an error.
func parseFlags(name string, fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, err
	}
	if fs.NArg() > 0 {
		return false, fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	return false, nil
}

// explicitly returns a function that runs set only when the flag name was
// given on the command line, so that flags override a preset (--quick)
// without resetting what the preset chose.
func explicitly(fs *flag.FlagSet) func(name string, set func()) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return func(name string, set func()) {
		if given[name] {
			set()
		}
	}
}

// locateTrace finds the trace file a subcommand reads (trace.Locate: a
// relative path is also looked for above the working directory and the
// executable); when there is none, the error says how to pass one.
func locateTrace(name, path string) (string, error) {
	found, err := trace.Locate(path)
	if err != nil {
		return "", fmt.Errorf("%s: %w; pass --trace PATH with a Mooncake trace (a checkout of the repository has one at %s)",
			name, err, trace.DefaultPath)
	}
	return found, nil
}

// writeJSON prints v to w as indented JSON and a newline: every command's
// --json output.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
