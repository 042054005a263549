package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
	"github.com/cellrouter/cellrouter/loadtest/discoverybench"
)

// runDiscovery is the "discovery" subcommand: flags into a
// discoverybench.Config, then discoverybench.Run against a control plane
// it starts from ../shared/tools/k8s (or $CELLROUTER_K8S_TOOLS).
func runDiscovery(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("discovery", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := discoverybench.DefaultConfig()
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	pods := fs.Int("pods", d.Pods, "pods created, made Ready and deleted, 1..250")
	interval := fs.Duration("interval", d.Interval, "pause between two pods' Ready, and between two deletions")
	workers := fs.Int("workers", d.Workers, "clients sending requests throughout")
	if help, err := parseFlags("discovery", fs, args); help || err != nil {
		return err
	}
	tools, err := kubetest.Tools()
	if err != nil {
		return err
	}
	cfg := discoverybench.Config{Pods: *pods, Interval: *interval, Workers: *workers}
	if !*quiet {
		cfg.Progress = stderr
	}
	rep, err := discoverybench.Run(ctx, tools, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	row := func(name string, d discoverybench.Dist) {
		fmt.Fprintf(stdout, "%-26s n=%-4d p50 %8.1f ms   p99 %8.1f ms   max %8.1f ms\n", name, d.N, d.P50, d.P99, d.Max)
	}
	fmt.Fprintf(stdout, "%d pods, %d requests (%d failed)\n", rep.Pods, rep.Requests, rep.Failed)
	row("ready -> routable", rep.ReadyToRoutable)
	row("ready -> first request", rep.ReadyToFirstRequest)
	row("delete -> removed", rep.DeleteToRemoved)
	row("delete -> last request", rep.DeleteToLastRequest)
	return nil
}
