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
	withTLS := fs.Bool("tls", false, "also measure the global tier's hop to the cell over mutual TLS against plaintext, side by side (needs --global)")
	chunks := fs.Int("chunks", d.Chunks, "stream chunks per response")
	pods := fs.Int("pods", d.Pods, "pods behind the cell")
	asJSON := fs.Bool("json", false, "print one JSON object")
	if help, err := parseFlags("overhead", fs, args); help || err != nil {
		return err
	}
	rep, err := overhead.Run(ctx, overhead.Config{Requests: *requests, Warmup: *warmup, PromptTokens: *prompt, Chunks: *chunks, Pods: *pods,
		Prompt: *kind, Global: *glob, TLS: *withTLS})
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
	return nil
}
