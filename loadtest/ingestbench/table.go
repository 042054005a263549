package ingestbench

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes the report as a readable table.
func (r *Report) WriteTable(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	ws := r.Workload
	fmt.Fprintf(tw, "workload\t%d requests, %d pods, %d batches, %d block events (%d stored, %d removed)\n",
		ws.Requests, r.Pods, ws.Batches, ws.BlockEvents, ws.StoredBlocks, ws.RemovedBlocks)
	fmt.Fprintf(tw, "\t%.0f block events and %.1f events per batch, %.1f bytes per block event, %s form\n",
		ws.BlocksPerBatch, ws.EventsPerBatch, ws.BytesPerBlockEvent, r.Setup.Form)
	fmt.Fprintf(tw, "machine\t%d CPUs, GOMAXPROCS %d, %s\n", r.Setup.NumCPU, r.Setup.GOMAXPROCS, r.Setup.GoVersion)
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "phase\toffered/s\tblock events/s\tbatches/s\tduration s\tlag p50 ms\tlag p90 ms\tlag p99 ms\tlag max ms\tcpu s\tvalid")
	for _, ph := range []*Phase{r.Main, r.Paced} {
		if ph == nil {
			continue
		}
		offered := "max"
		if ph.OfferedRate > 0 {
			offered = fmt.Sprintf("%.0f", ph.OfferedRate)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%v\n", ph.Name, offered,
			ph.BlockEventsPerS, ph.BatchesPerS, ph.DurationS, ph.LagP50Ms, ph.LagP90Ms, ph.LagP99Ms, ph.LagMaxMs, ph.CPUS, ph.Valid)
		for _, p := range ph.Problems {
			fmt.Fprintf(tw, "\tproblem: %s\n", p)
		}
	}
	fmt.Fprintln(tw)
	verdict := "below"
	if r.MeetsTarget {
		verdict = "meets"
	}
	fmt.Fprintf(tw, "target\t%.0f block events/s: %s (%.0f)\n", TargetBlockEventsPerS, verdict, r.BlockEventsPerS)
	return tw.Flush()
}
