package indexbench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// Result is the benchmark of one indexer.
type Result struct {
	// Indexer names the indexer.
	Indexer string `json:"indexer"`
	// ThresholdBlockOpsPerS is the highest offered rate (block-ops/s) at
	// which achieved kept within MinRatio of offered; 0 if no step passed.
	ThresholdBlockOpsPerS float64 `json:"threshold_block_ops_per_s"`
	// EventsPerS and QueriesPerS are the achieved event and Match rates of
	// the threshold step; EventBlockOpsPerS the event part of its block-ops.
	EventsPerS        float64 `json:"events_per_s"`
	QueriesPerS       float64 `json:"queries_per_s"`
	EventBlockOpsPerS float64 `json:"event_block_ops_per_s"`
	// Query latency in ns while events were applied at the threshold rate,
	// over QuerySamples Match calls.
	QueryP50Ns   int64 `json:"query_p50_ns"`
	QueryP99Ns   int64 `json:"query_p99_ns"`
	QueryMaxNs   int64 `json:"query_max_ns"`
	QuerySamples int64 `json:"query_samples"`
	// NoiseP50Ns and NoiseP99Ns are the threshold step's control: a fixed
	// CPU-only loop of about a microsecond timed after every Match (see Step).
	NoiseP50Ns int64 `json:"noise_p50_ns"`
	NoiseP99Ns int64 `json:"noise_p99_ns"`
	// IdleQueryP50Ns and IdleQueryP99Ns time every query once more against
	// the final state with nothing else running.
	IdleQueryP50Ns int64 `json:"idle_query_p50_ns"`
	IdleQueryP99Ns int64 `json:"idle_query_p99_ns"`
	// IdleBestP50Ns and IdleBestP99Ns time each of those queries five
	// times and keep its fastest run before taking the percentiles: what a
	// query costs without the preemptions of a shared machine.
	IdleBestP50Ns int64 `json:"idle_best_p50_ns"`
	IdleBestP99Ns int64 `json:"idle_best_p99_ns"`
	// IdleLookups and IdleRounds are the percentiles over those queries of
	// the reads each took (blocks, or pages in the paged layout) and of the
	// dependent rounds they were issued in; 0 for the baseline.
	IdleLookupsP50 int64 `json:"idle_lookups_p50,omitempty"`
	IdleLookupsP99 int64 `json:"idle_lookups_p99,omitempty"`
	IdleRoundsP50  int64 `json:"idle_rounds_p50,omitempty"`
	IdleRoundsP99  int64 `json:"idle_rounds_p99,omitempty"`
	// MatchAllocsPerOp is the heap allocations per Match in that idle pass.
	MatchAllocsPerOp float64 `json:"match_allocs_per_op"`
	// StepAllocsPerBlockOp is the allocations per block-op, all goroutines,
	// during the threshold step (the indexer's own; the loops allocate none).
	StepAllocsPerBlockOp float64 `json:"step_allocs_per_block_op"`
	// BytesPerBlock is the live heap growth of loading the final state into
	// a fresh indexer, per distinct block hash; HeapBytes the growth itself.
	BytesPerBlock float64 `json:"bytes_per_block"`
	HeapBytes     int64   `json:"heap_bytes"`
	// IndexedBlocks is the indexer's own count of distinct blocks then.
	IndexedBlocks int64 `json:"indexed_blocks"`
	// AccountedBytesPerBlock is the indexer's own table accounting per block
	// (cell/index: Stats().TableBytes / Blocks); 0 if it has none.
	AccountedBytesPerBlock float64 `json:"accounted_bytes_per_block,omitempty"`
	// PilotBlockOpsPerS is the unpaced pilot's rate, where the sweep started from.
	PilotBlockOpsPerS float64 `json:"pilot_block_ops_per_s"`
	// Backlog is the threshold step's backlog at the end of its window.
	Backlog float64 `json:"backlog"`
	// Valid: a step passed and its backlog was within MaxBacklog.
	Valid bool `json:"valid"`
	// LowerBound: no faster step failed, so the threshold may be higher.
	LowerBound bool `json:"threshold_is_lower_bound"`
	// Steps are the sweep's steps in the order run.
	Steps []Step `json:"steps"`
}

// Report is the outcome of a run. The cell/index figures are at the top
// level; the baseline's are under "baseline".
type Report struct {
	Trace           string  `json:"trace"`
	Layout          string  `json:"layout,omitempty"`
	Requests        int     `json:"requests"`
	Workers         int     `json:"workers"`
	Seed            uint64  `json:"seed"`
	BlockSize       int     `json:"block_size"`
	BlocksPerWorker int     `json:"blocks_per_worker"`
	ExpectedBlocks  int     `json:"expected_blocks"`
	GoMaxProcs      int     `json:"go_max_procs"`
	Appliers        int     `json:"appliers"`
	Queriers        int     `json:"queriers"`
	MaxBatchOps     int     `json:"max_batch_ops"`
	WindowS         float64 `json:"window_s"`
	// Timeline counts: Events = StoredEvents + RemovedEvents; BlockOps =
	// StoredBlocks + RemovedBlocks + QueryBlocks.
	Events        int64 `json:"events"`
	StoredEvents  int64 `json:"stored_events"`
	RemovedEvents int64 `json:"removed_events"`
	Queries       int64 `json:"queries"`
	StoredBlocks  int64 `json:"stored_blocks"`
	RemovedBlocks int64 `json:"removed_blocks"`
	QueryBlocks   int64 `json:"query_blocks"`
	BlockOps      int64 `json:"block_ops"`
	// EngineHitRatio is the engine model's prefix-cache hit ratio over all
	// query blocks.
	EngineHitRatio float64 `json:"engine_hit_ratio"`
	// DistinctBlocks is the number of distinct hashes in the final state.
	DistinctBlocks int64 `json:"distinct_blocks"`
	// TimerOverheadNs is the cost of the time.Now pair around each Match.
	TimerOverheadNs float64 `json:"timer_overhead_ns"`
	// Verified says the sequential check passed (see Verify).
	Verified bool `json:"verified"`
	// PrepS is the time spent reading, hashing and replaying the trace.
	PrepS float64 `json:"prep_s"`
	// LoadAvgStart and LoadAvgEnd are the machine's one-minute load average
	// before and after the timed part (0 if unknown): above the number of
	// cores, other processes were competing for them.
	LoadAvgStart float64 `json:"load_avg_start"`
	LoadAvgEnd   float64 `json:"load_avg_end"`

	Result
	// Paged is the paged layout's result when both layouts ran (Layout
	// "both"; the top level is then the block layout's), and PagedVsBlock
	// the ratios of the two.
	Paged        *Result       `json:"paged,omitempty"`
	PagedVsBlock *LayoutRatios `json:"paged_vs_block,omitempty"`
	// Baseline is the naive indexer's result, nil if not run.
	Baseline *Result `json:"baseline,omitempty"`
	// Speedup is the threshold of cell/index over the baseline's.
	Speedup float64 `json:"speedup"`
	// Valid: every indexer's result is valid.
	Valid bool `json:"valid"`
}

// LayoutRatios compares the paged layout with the block layout of the same
// run: each figure is paged / block, so below 1 is better for latencies
// and bytes, above 1 for throughput.
type LayoutRatios struct {
	QueryP50      float64 `json:"query_p50"`
	QueryP99      float64 `json:"query_p99"`
	IdleQueryP50  float64 `json:"idle_query_p50"`
	IdleQueryP99  float64 `json:"idle_query_p99"`
	IdleBestP50   float64 `json:"idle_best_p50"`
	IdleBestP99   float64 `json:"idle_best_p99"`
	Threshold     float64 `json:"threshold_block_ops_per_s"`
	BytesPerBlock float64 `json:"bytes_per_block"`
}

func compareLayouts(paged, block *Result) *LayoutRatios {
	ratio := func(a, b float64) float64 {
		if b == 0 {
			return 0
		}
		return a / b
	}
	return &LayoutRatios{
		QueryP50:      ratio(float64(paged.QueryP50Ns), float64(block.QueryP50Ns)),
		QueryP99:      ratio(float64(paged.QueryP99Ns), float64(block.QueryP99Ns)),
		IdleQueryP50:  ratio(float64(paged.IdleQueryP50Ns), float64(block.IdleQueryP50Ns)),
		IdleQueryP99:  ratio(float64(paged.IdleQueryP99Ns), float64(block.IdleQueryP99Ns)),
		IdleBestP50:   ratio(float64(paged.IdleBestP50Ns), float64(block.IdleBestP50Ns)),
		IdleBestP99:   ratio(float64(paged.IdleBestP99Ns), float64(block.IdleBestP99Ns)),
		Threshold:     ratio(paged.ThresholdBlockOpsPerS, block.ThresholdBlockOpsPerS),
		BytesPerBlock: ratio(paged.BytesPerBlock, block.BytesPerBlock),
	}
}

// WriteTable writes a human-readable summary of r.
func (r *Report) WriteTable(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "trace\t%s (%d requests)\n", r.Trace, r.Requests)
	fmt.Fprintf(tw, "setup\t%d workers, block size %d, %d blocks/worker, GOMAXPROCS %d, %d appliers, %d queriers, window %.2fs\n",
		r.Workers, r.BlockSize, r.BlocksPerWorker, r.GoMaxProcs, r.Appliers, r.Queriers, r.WindowS)
	fmt.Fprintf(tw, "timeline\t%d events (%d stored, %d removed), %d queries, %d block-ops (%d stored + %d removed + %d queried)\n",
		r.Events, r.StoredEvents, r.RemovedEvents, r.Queries, r.BlockOps, r.StoredBlocks, r.RemovedBlocks, r.QueryBlocks)
	fmt.Fprintf(tw, "engine\thit ratio %.3f, %d distinct blocks at the end, verified %v, timer overhead %.0f ns\n",
		r.EngineHitRatio, r.DistinctBlocks, r.Verified, r.TimerOverheadNs)
	fmt.Fprintf(tw, "machine\tload average %.1f before, %.1f after (GOMAXPROCS %d)\n", r.LoadAvgStart, r.LoadAvgEnd, r.GoMaxProcs)
	fmt.Fprintln(tw)
	results := []*Result{&r.Result}
	if r.Paged != nil {
		results = append(results, r.Paged)
	}
	if r.Baseline != nil {
		results = append(results, r.Baseline)
	}
	fmt.Fprint(tw, "\t")
	for _, res := range results {
		fmt.Fprintf(tw, "%s\t", res.Indexer)
	}
	fmt.Fprintln(tw)
	row := func(name string, f func(*Result) string) {
		fmt.Fprintf(tw, "%s\t", name)
		for _, res := range results {
			fmt.Fprintf(tw, "%s\t", f(res))
		}
		fmt.Fprintln(tw)
	}
	row("threshold block-ops/s", func(x *Result) string { return fmt.Sprintf("%.3gM", x.ThresholdBlockOpsPerS/1e6) })
	row("events/s", func(x *Result) string { return fmt.Sprintf("%.0f", x.EventsPerS) })
	row("queries/s", func(x *Result) string { return fmt.Sprintf("%.0f", x.QueriesPerS) })
	row("query p50 / p99 ns (loaded)", func(x *Result) string { return fmt.Sprintf("%d / %d", x.QueryP50Ns, x.QueryP99Ns) })
	row("control p50 / p99 ns (loaded)", func(x *Result) string { return fmt.Sprintf("%d / %d", x.NoiseP50Ns, x.NoiseP99Ns) })
	row("query p50 / p99 ns (idle)", func(x *Result) string { return fmt.Sprintf("%d / %d", x.IdleQueryP50Ns, x.IdleQueryP99Ns) })
	row("query p50 / p99 ns (idle, best of 5)", func(x *Result) string { return fmt.Sprintf("%d / %d", x.IdleBestP50Ns, x.IdleBestP99Ns) })
	row("reads p50 / p99 (rounds p50 / p99)", func(x *Result) string {
		return fmt.Sprintf("%d / %d (%d / %d)", x.IdleLookupsP50, x.IdleLookupsP99, x.IdleRoundsP50, x.IdleRoundsP99)
	})
	row("allocs per Match", func(x *Result) string { return fmt.Sprintf("%.2f", x.MatchAllocsPerOp) })
	row("bytes per block (heap)", func(x *Result) string { return fmt.Sprintf("%.1f", x.BytesPerBlock) })
	row("bytes per block (accounted)", func(x *Result) string { return fmt.Sprintf("%.1f", x.AccountedBytesPerBlock) })
	row("backlog at threshold", func(x *Result) string { return fmt.Sprintf("%.3f", x.Backlog) })
	row("valid", func(x *Result) string {
		if x.LowerBound {
			return fmt.Sprintf("%v (lower bound)", x.Valid)
		}
		return fmt.Sprint(x.Valid)
	})
	fmt.Fprintln(tw)
	if q := r.PagedVsBlock; q != nil {
		fmt.Fprintf(tw, "paged / block\tquery p50 %.2f, p99 %.2f loaded; p50 %.2f, p99 %.2f idle; p50 %.2f, p99 %.2f idle best of 5; threshold %.2f; bytes per block %.2f\n",
			q.QueryP50, q.QueryP99, q.IdleQueryP50, q.IdleQueryP99, q.IdleBestP50, q.IdleBestP99, q.Threshold, q.BytesPerBlock)
	}
	fmt.Fprintf(tw, "speedup\t%.1fx\n", r.Speedup)
	fmt.Fprintf(tw, "valid\t%v\n", r.Valid)
	return tw.Flush()
}
