package failover

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"
)

// FaultResult is one fault's row of the report.
type FaultResult struct {
	// Fault names the fault; Target the process it hit.
	Fault  string `json:"fault"`
	Target string `json:"target"`
	// AtS is when it was injected, in seconds from the replay's start.
	AtS float64 `json:"at_s"`
	// Requests counts the requests sent from the fault to the next one
	// (Window + Gap); FailedBeforeFirstByte and CutStreams are among them.
	Requests              int `json:"requests"`
	FailedBeforeFirstByte int `json:"failed_before_first_byte"`
	CutStreams            int `json:"cut_streams"`
	// DetectS is the seconds until traffic stopped going to the dead
	// process, ReadyS from its restart until it served again; -1 when it
	// did not happen within the bounds (Window, StartTimeout).
	DetectS float64 `json:"detect_s"`
	ReadyS  float64 `json:"ready_s"`
	// CachedRatio is cached over prompt tokens of the requests sent in the
	// Window after the fault; CachedRatioBaseline the same over the same
	// window of the run without faults.
	CachedRatio         float64 `json:"cached_ratio"`
	CachedRatioBaseline float64 `json:"cached_ratio_baseline"`
	// MaxFirstByteMS is the longest wait for a first byte (or for the
	// failure that ended the request) among the requests sent from the
	// fault to the next one; StalledStreams counts their streams that got
	// no event for StallGap or more, or ended with an error event
	// (ErrorEvents counts those).
	MaxFirstByteMS float64 `json:"max_first_byte_ms"`
	StalledStreams int     `json:"stalled_streams"`
	ErrorEvents    int     `json:"error_events"`
	// Flood is the event flood's outcome (event-flood only).
	Flood *FloodResult `json:"flood,omitempty"`
}

// Report is the suite's outcome.
type Report struct {
	// Faults has one row per injected fault, in order.
	Faults []FaultResult `json:"faults"`
	// Requests is the number of requests of one run; WarmupFailures the
	// requests of the fault run that failed before the first fault.
	Requests       int `json:"requests"`
	WarmupFailures int `json:"warmup_failures"`
	// WindowS and RestartAfterS echo the configuration, as do FreezeForS
	// and StallGapS.
	WindowS       float64 `json:"window_s"`
	RestartAfterS float64 `json:"restart_after_s"`
	FreezeForS    float64 `json:"freeze_for_s"`
	StallGapS     float64 `json:"stall_gap_s"`
}

// streamStats summarises the records sent in [from, to): the longest wait
// for a first byte, the streams that stalled (a gap of stallGap or more, or
// an error event) and those that ended with an error event.
func streamStats(recs []record, from, to, stallGap time.Duration) (maxFirst time.Duration, stalled, errorEvents int) {
	for _, r := range recs {
		if r.Sent < from || r.Sent >= to {
			continue
		}
		maxFirst = max(maxFirst, r.FirstByte)
		if r.ErrorEvent {
			errorEvents++
		}
		if r.ErrorEvent || r.MaxGap >= stallGap {
			stalled++
		}
	}
	return maxFirst, stalled, errorEvents
}

// windowStats summarises the records sent in [from, to): requests,
// failures before the first byte, cut streams, and the cached-token ratio
// of the complete ones.
func windowStats(recs []record, from, to time.Duration) (n, failed, cut int, ratio float64) {
	var prompt, cached int
	for _, r := range recs {
		if r.Sent < from || r.Sent >= to {
			continue
		}
		n++
		switch {
		case r.FailedBeforeFirstByte:
			failed++
		case r.Cut:
			cut++
		default:
			prompt += r.Prompt
			cached += r.Cached
		}
	}
	if prompt > 0 {
		ratio = float64(cached) / float64(prompt)
	}
	return n, failed, cut, ratio
}

func seconds(a, b time.Time) float64 {
	if a.IsZero() || b.IsZero() {
		return -1
	}
	return b.Sub(a).Seconds()
}

// buildReport computes the rows from the fault run and the baseline (nil:
// none).
func buildReport(cfg Config, base, faulty *run) *Report {
	rep := &Report{Requests: len(faulty.records), WindowS: cfg.Window.Seconds(), RestartAfterS: cfg.RestartAfter.Seconds(),
		FreezeForS: cfg.FreezeFor.Seconds(), StallGapS: cfg.StallGap.Seconds()}
	_, rep.WarmupFailures, _, _ = windowStats(faulty.records, 0, cfg.faultAt(0))
	for k, inj := range faulty.faults {
		from := inj.offset
		row := FaultResult{Fault: inj.fault, Target: inj.target, AtS: from.Seconds(),
			DetectS: seconds(inj.at, inj.detected), ReadyS: seconds(inj.restarted, inj.ready)}
		row.Requests, row.FailedBeforeFirstByte, row.CutStreams, _ = windowStats(faulty.records, from, cfg.faultAt(k+1))
		_, _, _, row.CachedRatio = windowStats(faulty.records, from, from+cfg.Window)
		var maxFirst time.Duration
		maxFirst, row.StalledStreams, row.ErrorEvents = streamStats(faulty.records, from, cfg.faultAt(k+1), cfg.StallGap)
		row.MaxFirstByteMS = float64(maxFirst) / 1e6
		row.Flood = inj.flood
		if base != nil {
			_, _, _, row.CachedRatioBaseline = windowStats(base.records, from, from+cfg.Window)
		}
		rep.Faults = append(rep.Faults, row)
	}
	return rep
}

// WriteTable prints the report as a table.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "fault\ttarget\tat_s\trequests\tfailed_before_first_byte\tcut_streams\tmax_first_byte_ms\tstalled_streams\tdetect_s\tready_s\tcached_ratio\tbaseline\t")
	for _, f := range r.Faults {
		fmt.Fprintf(tw, "%s\t%s\t%.1f\t%d\t%d\t%d\t%.0f\t%d\t%.2f\t%.2f\t%.4f\t%.4f\t\n", f.Fault, f.Target, f.AtS, f.Requests,
			f.FailedBeforeFirstByte, f.CutStreams, f.MaxFirstByteMS, f.StalledStreams, f.DetectS, f.ReadyS, f.CachedRatio, f.CachedRatioBaseline)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range r.Faults {
		if f.Flood != nil {
			fmt.Fprintln(w, f.Flood.summary())
		}
	}
	_, err := fmt.Fprintf(w, "%d requests per run; %d failed during warm-up; window %.0fs after each fault; restart %.0fs after it\n",
		r.Requests, r.WarmupFailures, r.WindowS, r.RestartAfterS)
	return err
}

// progress writes one progress line.
func progress(cfg Config, format string, args ...any) {
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "failover: "+format+"\n", args...)
	}
}

// progressWriter is where build output goes.
func progressWriter(cfg Config) io.Writer {
	if cfg.Progress != nil {
		return cfg.Progress
	}
	return os.Stderr
}
