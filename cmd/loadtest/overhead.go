package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/cellrouter/cellrouter/loadtest/overhead"
)

// runOverhead is the "overhead" subcommand: the cell's added latency
// against calling the pod directly, side by side, and the global tier's in
// front of the cell for token, text and chat prompts.
func runOverhead(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("overhead", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := overhead.DefaultConfig()
	requests := fs.Int("requests", d.Requests, "measured requests per side and mode")
	warmup := fs.Int("warmup", d.Warmup, "unmeasured requests per side first")
	prompt := fs.Int("prompt-tokens", d.PromptTokens, "prompt length in tokens (token ids, or text of about that many tokens)")
	kind := fs.String("prompt", d.Prompt, "what the direct and cell sides send: tokens, text (the cell tokenizes it) or chat")
	glob := fs.Bool("global", d.Global, "also measure the global tier in front of the cell, for token, text and chat prompts")
	picker := fs.Bool("picker", d.Picker, "also measure the cell as a gateway's endpoint picker (ext_proc) against proxy mode, side by side for the same requests")
	withTLS := fs.Bool("tls", false, "also measure the global tier's hop to the cell over mutual TLS against plaintext, side by side (needs --global)")
	chunks := fs.Int("chunks", d.Chunks, "stream chunks per response")
	pods := fs.Int("pods", d.Pods, "pods behind the cell")
	path := fs.Bool("path", d.Path, "also measure the whole path (pod, cell, global tier) at each --concurrency, the rate ramp and the CPU per request (needs --global)")
	conc := fs.String("concurrency", joinInts(d.Concurrency), "comma-separated client counts of the whole-path measurement")
	rates := fs.String("ramp-rates", joinFloats(d.RampRates), "comma-separated increasing rates (requests/s) of each tier's ramp")
	rampStep := fs.Duration("ramp-step", d.RampStep, "how long each ramp rate is sent")
	cpuRate := fs.Float64("cpu-rate", d.CPURate, "rate (requests/s) at which the CPU per request is measured")
	cpuStep := fs.Duration("cpu-step", d.CPUStep, "how long each tier is sent in each of the 5 rounds of the CPU measurement")
	cpuProfile := fs.String("cpuprofile", "", "write a pprof CPU profile of the whole-path measurement to this file (goroutines labelled tier=pod|cell|global|client)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if help, err := parseFlags("overhead", fs, args); help || err != nil {
		return err
	}
	cfg := overhead.Config{Requests: *requests, Warmup: *warmup, PromptTokens: *prompt, Chunks: *chunks, Pods: *pods,
		Prompt: *kind, Global: *glob, Picker: *picker, TLS: *withTLS, Path: *path && *glob, RampStep: *rampStep, CPURate: *cpuRate, CPUStep: *cpuStep}
	var err error
	if cfg.Concurrency, err = parseList(*conc, strconv.Atoi); err != nil {
		return fmt.Errorf("--concurrency: %w", err)
	}
	if cfg.RampRates, err = parseList(*rates, func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return fmt.Errorf("--ramp-rates: %w", err)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		cfg.CPUProfile = f
	}
	rep, err := overhead.Run(ctx, cfg)
	if err != nil {
		return err
	}
	rep.GoMaxProcs = runtime.GOMAXPROCS(0)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(rep)
	}
	fmt.Fprintf(stdout, "%d requests per side, %d pods, %d-token %s prompts (ms)\n", rep.Requests, rep.Pods, rep.PromptTokens, rep.Prompt)
	fmt.Fprintf(stdout, "%-14s %8s %8s %8s %8s %8s %8s\n", "mode", "dir p50", "dir p99", "cell p50", "cell p99", "+p50", "+p99")
	for _, m := range []struct {
		name string
		m    overhead.Mode
	}{{"non-streaming", rep.NonStreaming}, {"streaming", rep.Streaming}} {
		fmt.Fprintf(stdout, "%-14s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", m.name, m.m.Direct.P50Ms, m.m.Direct.P99Ms,
			m.m.Cell.P50Ms, m.m.Cell.P99Ms, m.m.OverheadP50Ms, m.m.OverheadP99Ms)
	}
	if pk := rep.Picker; pk != nil {
		fmt.Fprintf(stdout, "\nthe cell as a gateway's endpoint picker against proxy mode, token prompts, interleaved (ms; CPU in us per request)\n")
		fmt.Fprintf(stdout, "picker adds p50 %+.3f ms, p99 %+.3f ms (streaming %+.3f / %+.3f), %.1f us CPU; proxy adds p50 %+.3f ms, p99 %+.3f ms, %.1f us CPU\n",
			pk.OverheadP50Ms, pk.OverheadP99Ms, pk.StreamingOverheadP50Ms, pk.StreamingOverheadP99Ms, pk.CPUUsPerRequest,
			pk.ProxyOverheadP50Ms, pk.ProxyOverheadP99Ms, pk.ProxyCPUUsPerRequest)
		fmt.Fprintf(stdout, "the decision alone (picker minus a picker that decides nothing, same gateway): p50 %+.3f ms, %.1f us CPU\n",
			pk.DecisionP50Ms, pk.DecisionCPUUsPerRequest)
	}
	g := rep.GlobalTier
	if g == nil {
		return nil
	}
	fmt.Fprintf(stdout, "\nglobal tier in front of the cell, non-streaming, routed by summary (text: %d tokens; ms)\n", g.PromptTokens)
	fmt.Fprintf(stdout, "%-24s %8s %8s %8s %8s %8s %8s\n", "prompt", "cell p50", "cell p99", "glob p50", "glob p99", "+p50", "+p99")
	for _, m := range []struct {
		name string
		m    overhead.GlobalMode
	}{{"tokens", g.Tokens}, {"text (in process)", g.Text}, {"chat (in process)", g.Chat},
		{"text (cell /tokenize)", g.TextRemote}, {"chat (cell /tokenize)", g.ChatRemote}} {
		fmt.Fprintf(stdout, "%-24s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", m.name, m.m.Cell.P50Ms, m.m.Cell.P99Ms,
			m.m.Global.P50Ms, m.m.Global.P99Ms, m.m.AddedP50Ms, m.m.AddedP99Ms)
	}
	fmt.Fprintf(stdout, "text minus tokens at the global tier: p50 %+.3f ms, p99 %+.3f ms\n", g.TextMinusTokensP50Ms, g.TextMinusTokensP99Ms)
	fmt.Fprintf(stdout, "tokenize alone (us, p50/p99):")
	for _, k := range []string{"text", "chat", "text_remote", "chat_remote"} {
		fmt.Fprintf(stdout, " %s %.1f/%.1f", k, g.Tokenize[k].P50Us, g.Tokenize[k].P99Us)
	}
	fmt.Fprintf(stdout, "; segment cache hit ratio %.2f\n", g.CacheHitRatio)
	if h := rep.TLSHop; h != nil {
		fmt.Fprintf(stdout, "\nthe global tier's hop to the cell (probe and hand-off), token prompts, interleaved (ms)\n")
		fmt.Fprintf(stdout, "%-24s %8s %8s %8s %8s %8s %8s\n", "hop", "cell p50", "cell p99", "glob p50", "glob p99", "+p50", "+p99")
		for _, m := range []struct {
			name string
			m    overhead.GlobalMode
		}{{"plaintext", h.Plain}, {"mutual TLS", h.MutualTLS}} {
			fmt.Fprintf(stdout, "%-24s %8.3f %8.3f %8.3f %8.3f %8.3f %8.3f\n", m.name, m.m.Cell.P50Ms, m.m.Cell.P99Ms,
				m.m.Global.P50Ms, m.m.Global.P99Ms, m.m.AddedP50Ms, m.m.AddedP99Ms)
		}
		fmt.Fprintf(stdout, "mutual TLS adds: p50 %+.3f ms, p99 %+.3f ms\n", h.AddedP50Ms, h.AddedP99Ms)
	}
	printPath(stdout, rep)
	return nil
}

// printPath prints the whole-path measurement.
func printPath(w io.Writer, rep *overhead.Report) {
	p := rep.Path
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\nthe whole path, token prompts, tiers interleaved on every client (ms)\n")
	fmt.Fprintf(w, "%-5s %-6s %8s %8s %8s %8s %9s %9s %9s %9s %9s %9s %9s\n", "conc", "stream", "pod p50", "pod p99", "cell p99", "glob p99",
		"+cell p50", "+cell p99", "+glob p50", "+glob p99", "+both p50", "+both p99", "+probe p50")
	for _, l := range p.Levels {
		fmt.Fprintf(w, "%-5d %-6v %8.3f %8.3f %8.3f %8.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n", l.Concurrency, l.Streaming, l.Pod.P50Ms, l.Pod.P99Ms,
			l.Cell.P99Ms, l.Global.P99Ms, l.CellAdded.P50Ms, l.CellAdded.P99Ms, l.GlobalAdded.P50Ms, l.GlobalAdded.P99Ms, l.BothAdded.P50Ms, l.BothAdded.P99Ms,
			l.ProbeAdded.P50Ms)
	}
	fmt.Fprintf(w, "process CPU per request at %.0f/s (us): pod path %.1f, cell path %.1f, global path %.1f, probed global path %.1f; cell adds %.1f, global tier %.1f, the probe %.1f\n",
		p.CPU.Rate, p.CPU.ByTierUs[overhead.TierPod], p.CPU.ByTierUs[overhead.TierCell], p.CPU.ByTierUs[overhead.TierGlobal],
		p.CPU.ByTierUs[overhead.TierGlobalProbed], p.CPU.CellUs, p.CPU.GlobalUs, p.CPU.ProbeUs)
	for _, tier := range []string{overhead.TierPod, overhead.TierCell, overhead.TierGlobal, overhead.TierGlobalProbed} {
		fmt.Fprintf(w, "ramp %-13s max %6.0f/s peak %6.0f/s:", tier, p.MaxRPS[tier], p.PeakRPS[tier])
		for _, s := range p.Ramp[tier] {
			mark := ""
			if !s.Sustained {
				mark = "!"
			}
			fmt.Fprintf(w, " %.0f->%.0f +p99 %.2f%s", s.Rate, s.Achieved, s.AddedP99Ms, mark)
		}
		fmt.Fprintln(w)
	}
	g := rep.Global
	fmt.Fprintf(w, "global: both tiers add p50 %+.3f ms, p99 %+.3f ms at concurrency 1; max %.0f requests/s (peak %.0f); %.1f us CPU per request\n",
		g.OverheadP50Ms, g.OverheadP99Ms, g.MaxRPS, g.PeakRPS, g.CPUUsPerRequest)
}

// parseList parses a comma-separated list.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func joinFloats(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.FormatFloat(x, 'f', -1, 64))
	}
	return strings.Join(s, ",")
}
