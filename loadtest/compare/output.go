package compare

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/cellrouter/cellrouter/loadtest/report"
)

// Names returns the modes that ran, in run order.
func (r *Report) Names() []string {
	var out []string
	for _, n := range r.order {
		if r.Modes[n] != nil {
			out = append(out, n)
		}
	}
	return out
}

// WriteTable writes the comparison as a readable table.
func (r *Report) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d requests (one conversation in %d, %d prompt tokens), %d pods x %d blocks of %d tokens, prefill %.0fµs/token, max %d running\n",
		r.Requests, r.Sample, r.PromptTokens, r.Pods, r.BlocksPerPod, r.BlockSize, r.PrefillPerTokenUs, r.MaxRunning)
	fmt.Fprintf(w, "reachable reuse at this cache size %.1f%% (unbounded cache %.1f%%)\n\n", 100*r.ReachableReuse, 100*r.UnboundedReuse)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\tok\terrors\tTTFT p50 ms\tTTFT p99 ms\tE2E p50 ms\tcached\tmax pod share\tevicted blocks\t")
	for _, n := range r.Names() {
		m := r.Modes[n]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f%%\t%.1f%%\t%d\t\n", n, m.OK, m.Errors, m.TTFTP50Ms, m.TTFTP99Ms,
			m.E2EP50Ms, 100*m.CachedTokenRatio, 100*m.MaxPodShare, m.EvictedBlocksEst)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rr := r.Modes[ModeRoundRobin]; rr != nil {
		fmt.Fprintln(w, "\nagainst round_robin:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "mode\tTTFT p50 speedup\tTTFT p99 speedup\tcached ratio gain\tmax share / even\t")
		for _, n := range r.Names() {
			if v := r.Modes[n].VsRoundRobin; v != nil {
				fmt.Fprintf(tw, "%s\t%.2fx\t%.2fx\t%+.1f pts\t%.2f\t\n", n, v.TTFTP50Speedup, v.TTFTP99Speedup, 100*v.CachedRatioGain, v.MaxShareOverMean)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if c := r.Checks; c != nil {
		fmt.Fprintf(w, "\nkv vs round_robin TTFT p50: %.2fx faster (want >= 2) %s\n", c.KVTTFTP50Speedup, verdict(c.TTFTPass))
		fmt.Fprintf(w, "kv cached ratio / reachable reuse: %.2f (want >= 0.9) %s\n", c.KVReuseOverReachable, verdict(c.ReusePass))
		fmt.Fprintf(w, "kv max pod share / even share: %.2f (want <= 2) %s\n", c.KVMaxShareOverMean, verdict(c.BalancePass))
		fmt.Fprintf(w, "eviction happened: %v\n", c.Evicting)
	}
	if s := r.Saturation; s != nil {
		fmt.Fprint(w, "cached / reachable reuse:")
		for _, n := range r.Names() {
			fmt.Fprintf(w, " %s %.2f", n, s.CachedOverReachable[n])
		}
		fmt.Fprintln(w)
		// The verdicts are on the TTFT from arrival; the figures from the
		// send follow when the generator's cap held requests back.
		sent := func(v *Ratios) string {
			if s.ScheduleKept || v == nil {
				return ""
			}
			return fmt.Sprintf(" (from the send %.2f, %.2f, %.2f)", v.P50, v.P90, v.P99)
		}
		if !s.ScheduleKept {
			fmt.Fprintln(w, "the generator's concurrency cap held requests back (delayed): TTFT below is from each request's scheduled arrival")
		}
		if v := s.KVOverRoundRobinFromArrival; v != nil {
			fmt.Fprintf(w, "kv / round_robin TTFT p50 %.2f, p90 %.2f, p99 %.2f (want <= 1) %s%s\n", v.P50, v.P90, v.P99, verdict(s.RoundRobinPass), sent(s.KVOverRoundRobin))
		}
		if v := s.KVOverNoSpecFromArrival; v != nil {
			fmt.Fprintf(w, "kv / kv-nospec TTFT p50 %.2f, p90 %.2f, p99 %.2f (want <= 1) %s%s\n", v.P50, v.P90, v.P99, verdict(s.NoSpecPass), sent(s.KVOverNoSpec))
		}
		if s.ApproxOverKVP50FromArrival > 0 {
			fmt.Fprintf(w, "approx / kv TTFT p50 %.2f (want <= 1.5) %s\n", s.ApproxOverKVP50FromArrival, verdict(s.ApproxPass))
		}
	}
	if b := r.Bypass; b != nil {
		fmt.Fprintf(w, "\n%.0f%% of requests around the cell (to %d pods): TTFT p90 kv %.1f ms, kv-engine %.1f ms: %.2fx (want >= 1.3) %s; p50 %.2fx, p99 %.2fx\n",
			100*b.Share, b.Pods, b.KVTTFTP90Ms, b.KVEngineTTFTP90Ms, b.TTFTP90Ratio, verdict(b.Pass), b.TTFTP50Ratio, b.TTFTP99Ratio)
	}
	_, err := fmt.Fprintf(w, "wall time %.1f s\n", r.WallS)
	return err
}

// verdict is a check's word.
func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// WriteDir writes the comparison's report into dir: the modes' TTFT CDFs
// on one plot, each mode's requests per pod, each mode's requests one per
// row (requests_<mode>.csv), and an index.html with the table. The JSON
// is the caller's (it prints it or writes it).
func (r *Report) WriteDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("compare: %v", err)
	}
	var series []report.Series
	page := &report.Page{Title: "Routing comparison"}
	page.Notes = append(page.Notes, fmt.Sprintf("%d requests (one conversation in %d of the trace), %d pods of %d blocks of %d tokens; prefill %.0fµs per uncached token, at most %d requests running per pod.",
		r.Requests, r.Sample, r.Pods, r.BlocksPerPod, r.BlockSize, r.PrefillPerTokenUs, r.MaxRunning),
		fmt.Sprintf("Reachable reuse at this cache size: %.1f%% (%s). With an unbounded cache: %.1f%%.", 100*r.ReachableReuse, ReuseMethod, 100*r.UnboundedReuse))
	tab := report.Table{Caption: "Modes", Header: report.Row{"mode", "ok", "errors", "TTFT p50 ms", "TTFT p99 ms", "E2E p50 ms", "cached", "max pod share"}}
	files := map[string]string{}
	for _, n := range r.Names() {
		m := r.Modes[n]
		var ttft []float64
		for i := range m.results {
			if m.results[i].OK() {
				ttft = append(ttft, float64(m.results[i].TTFT.Microseconds())/1000)
			}
		}
		series = append(series, report.Series{Name: n, Values: ttft})
		tab.Rows = append(tab.Rows, report.Row{n, fmt.Sprint(m.OK), fmt.Sprint(m.Errors), fmt.Sprintf("%.1f", m.TTFTP50Ms),
			fmt.Sprintf("%.1f", m.TTFTP99Ms), fmt.Sprintf("%.1f", m.E2EP50Ms), fmt.Sprintf("%.1f%%", 100*m.CachedTokenRatio),
			fmt.Sprintf("%.1f%%", 100*m.MaxPodShare)})
		var csv bytes.Buffer
		if err := writeRequestsCSV(&csv, m.results); err != nil {
			return err
		}
		files["requests_"+n+".csv"] = csv.String()
		name := "pods_" + n + ".svg"
		files[name] = report.PodPlot("Requests per pod: "+n, m.Pods)
		page.Figures = append(page.Figures, report.Figure{File: name, Caption: "Requests each pod served under " + n + " routing; the dashed line is an even share."})
	}
	page.Tables = append(page.Tables, tab)
	files["ttft_cdf.svg"] = report.CDFPlot("Time to first token by routing mode", "TTFT (ms)", series)
	page.Figures = append([]report.Figure{{File: "ttft_cdf.svg", Caption: "Cumulative distribution of TTFT per routing mode."}}, page.Figures...)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return fmt.Errorf("compare: %v", err)
		}
	}
	var html bytes.Buffer
	if err := report.WriteHTML(&html, page); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), html.Bytes(), 0o644); err != nil {
		return fmt.Errorf("compare: %v", err)
	}
	return nil
}
