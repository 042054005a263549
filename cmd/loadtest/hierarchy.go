package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/hierarchy"
)

// runHierarchy is the "hierarchy" subcommand: flags into a
// hierarchy.Config, then hierarchy.Run, then the report as JSON or a table.
func runHierarchy(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hierarchy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	d := hierarchy.DefaultConfig()
	quick := fs.Bool("quick", false, "a short run (first 2000 requests); explicit flags still apply")
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	tracePath := fs.String("trace", d.TracePath, "Mooncake trace (JSON Lines); a relative path is also looked for above the working directory and the executable")
	maxReq := fs.Int("max-requests", d.MaxRequests, "replay only the first N requests (0 = all)")
	cells := fs.Int("cells", d.Cells, "cells of the hierarchical router")
	podsPerCell := fs.Int("pods-per-cell", d.PodsPerCell, "pods per cell (cells * pods-per-cell <= 256: the flat index holds them all)")
	seed := fs.Uint64("seed", d.Seed, "seed of every routing decision's tie-breaks")
	seeds := fs.Int("seeds", d.Seeds, "replays pooled per load level, with seeds --seed, --seed+1, ... (one replay's loss moves by tenths of a point with the seed, more under load; the report gives the seeds' standard error)")
	blockSize := fs.Int("block-size", d.BlockSize, "engine and router KV block size in tokens (must divide 512)")
	bpp := fs.Int("blocks-per-pod", d.BlocksPerPod, "KV cache budget of each pod, in blocks")
	interval := fs.Float64("summary-interval", d.SummaryInterval, "seconds of trace time between summary generations")
	loadInterval := fs.Float64("load-interval", d.LoadInterval, "seconds of trace time between the cells' load announcements (0: only with summaries)")
	maxProbes := fs.Int("max-probes", d.MaxProbes, "most cells probed per request")
	slack := fs.Int("probe-slack", d.ProbeSlack, "probe cells whose estimate is within this many blocks of the best")
	coldBlocks := fs.Int("cold-blocks", d.ColdBlocks, "leading blocks hashed to place a cold request")
	probeCold := fs.Bool("probe-cold", d.ProbeCold, "probe a cold request's hashed cells (--max-probes of them, from 2) and take the cheapest; false: the less loaded of two, unprobed")
	moveW := fs.Float64("move-weight", d.MoveWeight, "global choice's cost per block of copying a prefix another probed cell holds, on top of its prefill")
	stride := fs.Int("stride", d.Stride, "summary sampling stride over chain depths")
	fpr := fs.Float64("fpr", d.FalsePositiveRate, "summary Bloom filter false-positive rate")
	overlap := fs.Float64("overlap-weight", d.OverlapWeight, "weight of a prefill block against an active block (cells and global choice)")
	pressure := fs.Float64("pressure-weight", d.PressureWeight, "cost of a cached block a pick would evict to store the request, against an active block (cells' kv-cost and global choice)")
	fullAt := fs.Float64("full-at", d.FullAt, "global search: the estimated cache fullness (summary blocks over the cell's KV blocks) at which a cell counts as full, in (0, 1]")
	avoidBusy := fs.Bool("avoid-busy", d.AvoidBusy, "global choice: a cell whose pick is busy goes after every cell whose pick is not, whatever the costs (false: its cost decides, busy breaks ties)")
	temp := fs.Float64("temperature", d.Temperature, "softmax temperature of the cells' picker (0 = lowest cost)")
	busy := fs.Float64("busy-threshold", d.BusyThreshold, "active/total blocks above which a pod is filtered as busy")
	prompt := fs.String("prompt", d.Prompt, "what requests carry: tokens (512 ids per hash id), text (about 512 tokens of text per hash id) "+
		"or chat (one message per hash id); text and chats are tokenized by the engines, the global tier and the cells")
	tokJSON := fs.String("tokenizer-json", d.TokenizerJSON, "tokenizer.json of the text modes (default: the demo tokenizer)")
	chatTmpl := fs.String("chat-template", d.ChatTemplate, "built-in chat template of the text modes (default: the demo tokenizer's, chatml)")
	decode := fs.Float64("decode-ms-per-token", d.DecodeMsPerToken, "load model: ms of trace time a request holds its pod per output token")
	loads := fs.String("loads", joinFloats(hierarchy.DefaultLoads), "load sweep: comma-separated decode-ms-per-token values, one run each "+
		"(\"\" runs once; the default is the sweep unless --decode-ms-per-token is given)")
	prefillMs := fs.Float64("prefill-ms-per-block", d.PrefillMsPerBlock, "TTFT estimate: prefill ms of one block on an idle pod")
	workload := fs.String("workload", d.Workload, "conversation (the trace), agents (generated agent sessions with long shared system prompts) or cold (generated conversations with no shared prefix, more than half the requests cold)")
	scale := fs.Bool("scale", false, "fleet-scale mode: the global tier over --cells cells (default 1024) of many tenants, against an exact oracle; "+
		"its defaults differ (see loadtest/hierarchy.DefaultScaleConfig) and only the flags given apply")
	tenants := fs.Int("tenants", 0, fmt.Sprintf("scale mode: tenants, each a copy of the trace with its own cache salt and time offset (0 = one per %d cells)",
		hierarchy.DefaultCellsPerTenant))
	seconds := fs.Float64("seconds", hierarchy.DefaultScaleConfig().Seconds, "scale mode: seconds of trace time replayed from the tenants' merged stream")
	warmup := fs.Float64("warmup", hierarchy.DefaultScaleConfig().WarmupSeconds, "scale mode: seconds of trace time that fill the caches first, left out of every figure")
	requests := fs.Int("requests", 0, "scale mode: stop after this many requests (0 = when --seconds of trace time are replayed)")
	if help, err := parseFlags("hierarchy", fs, args); help || err != nil {
		return err
	}
	if *scale {
		sc := hierarchy.DefaultScaleConfig()
		apply := explicitly(fs)
		apply("trace", func() { sc.TracePath = *tracePath })
		apply("cells", func() { sc.Cells = *cells })
		apply("pods-per-cell", func() { sc.PodsPerCell = *podsPerCell })
		apply("blocks-per-pod", func() { sc.BlocksPerPod = *bpp })
		apply("seed", func() { sc.Seed = *seed })
		apply("block-size", func() { sc.BlockSize = *blockSize })
		apply("summary-interval", func() { sc.SummaryInterval = *interval })
		apply("max-probes", func() { sc.MaxProbes = *maxProbes })
		apply("probe-slack", func() { sc.ProbeSlack = *slack })
		apply("probe-cold", func() { sc.ProbeCold = *probeCold })
		apply("move-weight", func() { sc.MoveWeight = *moveW })
		apply("stride", func() { sc.Stride = *stride })
		apply("fpr", func() { sc.FalsePositiveRate = *fpr })
		apply("decode-ms-per-token", func() { sc.DecodeMsPerToken = *decode })
		apply("tenants", func() { sc.Tenants = *tenants })
		apply("seconds", func() { sc.Seconds = *seconds })
		apply("warmup", func() { sc.WarmupSeconds = *warmup })
		apply("requests", func() { sc.Requests = *requests })
		found, err := locateTrace("hierarchy", sc.TracePath)
		if err != nil {
			return err
		}
		sc.TracePath = found
		if !*quiet {
			start := time.Now()
			sc.Progress = func(format string, a ...any) {
				fmt.Fprintf(stderr, "[%6.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, a...))
			}
		}
		rep, err := hierarchy.RunScale(ctx, sc)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(stdout).Encode(rep)
		}
		return rep.WriteTable(stdout)
	}
	cfg := d
	if *quick {
		cfg = hierarchy.QuickConfig()
	}
	apply := explicitly(fs)
	apply("trace", func() { cfg.TracePath = *tracePath })
	apply("max-requests", func() { cfg.MaxRequests = *maxReq })
	apply("cells", func() { cfg.Cells = *cells })
	apply("pods-per-cell", func() { cfg.PodsPerCell = *podsPerCell })
	apply("seed", func() { cfg.Seed = *seed })
	apply("seeds", func() { cfg.Seeds = *seeds })
	apply("block-size", func() { cfg.BlockSize = *blockSize })
	apply("blocks-per-pod", func() { cfg.BlocksPerPod = *bpp })
	apply("summary-interval", func() { cfg.SummaryInterval = *interval })
	apply("load-interval", func() { cfg.LoadInterval = *loadInterval })
	apply("max-probes", func() { cfg.MaxProbes = *maxProbes })
	apply("probe-slack", func() { cfg.ProbeSlack = *slack })
	apply("cold-blocks", func() { cfg.ColdBlocks = *coldBlocks })
	apply("probe-cold", func() { cfg.ProbeCold = *probeCold })
	apply("move-weight", func() { cfg.MoveWeight = *moveW })
	apply("stride", func() { cfg.Stride = *stride })
	apply("fpr", func() { cfg.FalsePositiveRate = *fpr })
	apply("overlap-weight", func() { cfg.OverlapWeight = *overlap })
	apply("pressure-weight", func() { cfg.PressureWeight = *pressure })
	apply("full-at", func() { cfg.FullAt = *fullAt })
	apply("avoid-busy", func() { cfg.AvoidBusy = *avoidBusy })
	apply("temperature", func() { cfg.Temperature = *temp })
	apply("busy-threshold", func() { cfg.BusyThreshold = *busy })
	apply("decode-ms-per-token", func() { cfg.DecodeMsPerToken = *decode })
	apply("prefill-ms-per-block", func() { cfg.PrefillMsPerBlock = *prefillMs })
	apply("workload", func() { cfg.Workload = *workload })
	// The default run sweeps; one explicit load runs once, as before.
	if !isSet(fs, "decode-ms-per-token") || isSet(fs, "loads") {
		l, err := parseFloats(*loads)
		if err != nil {
			return fmt.Errorf("hierarchy: --loads: %w", err)
		}
		cfg.Loads = l
	}
	apply("prompt", func() { cfg.Prompt = *prompt })
	apply("tokenizer-json", func() { cfg.TokenizerJSON = *tokJSON })
	apply("chat-template", func() { cfg.ChatTemplate = *chatTmpl })
	if cfg.Workload == hierarchy.WorkloadConversation { // the others are generated: no trace to find
		found, err := locateTrace("hierarchy", cfg.TracePath)
		if err != nil {
			return err
		}
		cfg.TracePath = found
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
	rep, err := hierarchy.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	return rep.WriteTable(stdout)
}

// isSet reports whether the flag was given on the command line.
func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseFloats parses a comma-separated list of numbers ("" is none).
func parseFloats(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
