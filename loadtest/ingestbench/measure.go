package ingestbench

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"
)

// Phase is the result of one run of the workload over ZMQ.
type Phase struct {
	// Name is "saturation" or "paced".
	Name string `json:"name"`
	// OfferedRate is the offered rate of block events per second (0: as fast
	// as the publishers go).
	OfferedRate float64 `json:"offered_rate"`
	// BlockEventsPerS is the block events the applier counted (blocks
	// stored and removed) over DurationS.
	BlockEventsPerS float64 `json:"block_events_per_s"`
	// BatchesPerS is the batches applied over DurationS.
	BatchesPerS float64 `json:"batches_per_s"`
	// DurationS is the time from the first publish to the last batch applied.
	DurationS float64 `json:"duration_s"`
	// CPUS is the CPU time (user and system) the whole process used from
	// the first publish to the last apply: publishers, subscriber, decoder,
	// applier and index together, since they share the machine.
	CPUS float64 `json:"cpu_s"`
	// PublishS is the time the publishers took to hand every batch over.
	PublishS float64 `json:"publish_s"`
	// Lag percentiles: from a batch's publish to its apply, over batches.
	LagP50Ms float64 `json:"lag_p50_ms"`
	LagP90Ms float64 `json:"lag_p90_ms"`
	LagP99Ms float64 `json:"lag_p99_ms"`
	LagMaxMs float64 `json:"lag_max_ms"`
	// BlockEvents, BlocksStored and BlocksRemoved are the applier's counts
	// of router block writes.
	BlockEvents   uint64 `json:"block_events"`
	BlocksStored  uint64 `json:"blocks_stored"`
	BlocksRemoved uint64 `json:"blocks_removed"`
	// Batches is the batches the applier applied; BatchesDropped those it
	// dropped (any reason).
	Batches        uint64 `json:"batches"`
	BatchesDropped uint64 `json:"batches_dropped"`
	// Messages, DecodeErrors, Replays and GiveUps are the subscriber's
	// counts (Replays without the catch-up each pod gets at connection,
	// before publishing starts); Gaps the applier's; SendErrors the
	// publishers'.
	Messages     uint64 `json:"messages"`
	DecodeErrors uint64 `json:"decode_errors"`
	Gaps         uint64 `json:"gaps"`
	Replays      uint64 `json:"replays"`
	GiveUps      uint64 `json:"give_ups"`
	SendErrors   uint64 `json:"send_errors"`
	// IndexBlocks is the number of blocks in the index at the end.
	IndexBlocks int64 `json:"index_blocks"`
	// Verified says the index matched the reference (false when not checked).
	Verified bool `json:"verified"`
	// Valid says every batch was applied, nothing was dropped or lost, the
	// index is not empty and, when checked, matches the reference.
	Valid bool `json:"valid"`
	// Problems says why the phase is not valid.
	Problems []string `json:"problems,omitempty"`
}

// runPhase replays w over ZMQ once at rate (0: saturation) and measures it.
// ref, when not nil, is the reference index content the result must match.
func runPhase(ctx context.Context, cfg Config, w *Workload, name string, rate float64, ref []podEntry) (*Phase, error) {
	r, err := newRig(ctx, cfg, w)
	if err != nil {
		return nil, err
	}
	defer r.close()
	cfg.progress("%s: %d publishers subscribed, publishing %d batches (%d block events)%s",
		name, len(r.pubs), w.Batches, w.BlockEvents(), rateNote(rate))
	replays0 := r.sub.Counters().ReplaysRequested.Load() // catch-ups at connection
	cpu0 := cpuTime()
	start, stamps, err := r.publish(w, rate)
	if err != nil {
		return nil, err
	}
	published := time.Since(start)
	if err := r.wait(ctx, w, cfg.Timeout); err != nil {
		return nil, err
	}
	ph := &Phase{Name: name, OfferedRate: rate, PublishS: published.Seconds(), CPUS: (cpuTime() - cpu0).Seconds()}
	startNs := start.Sub(r.rec.base).Nanoseconds()
	var last int64
	lags := make([]int64, 0, w.Batches)
	for p := range w.Pods {
		for i, done := range r.rec.done[p] {
			last = max(last, done)
			lags = append(lags, done-stamps[p][i])
		}
	}
	dur := time.Duration(last - startNs)
	ph.DurationS = dur.Seconds()
	c := r.app.Counters()
	ph.BlocksStored, ph.BlocksRemoved = c.BlocksStored.Load(), c.BlocksRemoved.Load()
	ph.BlockEvents = ph.BlocksStored + ph.BlocksRemoved
	ph.Batches = c.Batches.Load()
	for i := range c.BatchesDropped {
		ph.BatchesDropped += c.BatchesDropped[i].Load()
	}
	ph.Gaps = c.Gaps.Load()
	sc := r.sub.Counters()
	ph.Messages, ph.DecodeErrors = sc.Messages.Load(), sc.DecodeErrorsTotal()
	ph.Replays, ph.GiveUps = sc.ReplaysRequested.Load()-replays0, sc.GiveUps.Load()
	for _, p := range r.pubs {
		ph.SendErrors += p.Counters().SendErrors.Load()
	}
	if dur > 0 {
		ph.BlockEventsPerS = float64(ph.BlockEvents) / dur.Seconds()
		ph.BatchesPerS = float64(ph.Batches) / dur.Seconds()
	}
	slices.Sort(lags)
	ph.LagP50Ms, ph.LagP90Ms = ms(quantile(lags, 0.50)), ms(quantile(lags, 0.90))
	ph.LagP99Ms, ph.LagMaxMs = ms(quantile(lags, 0.99)), ms(quantile(lags, 1))
	ph.IndexBlocks = r.ix.Stats().Blocks
	if ref != nil {
		if err := compareIndex(dumpByPod(r.ix, w), ref); err != nil {
			ph.Problems = append(ph.Problems, err.Error())
		} else {
			ph.Verified = true
		}
	}
	ph.check(w)
	cfg.progress("%s: %.0f block events/s, %.0f batches/s over %.2fs; lag p50 %.1fms p99 %.1fms; valid %v",
		name, ph.BlockEventsPerS, ph.BatchesPerS, ph.DurationS, ph.LagP50Ms, ph.LagP99Ms, ph.Valid)
	return ph, nil
}

// check fills Valid and Problems from the counts.
func (ph *Phase) check(w *Workload) {
	add := func(ok bool, format string, a ...any) {
		if !ok {
			ph.Problems = append(ph.Problems, fmt.Sprintf(format, a...))
		}
	}
	add(ph.Batches == uint64(w.Batches), "applied %d batches, want %d", ph.Batches, w.Batches)
	add(ph.BatchesDropped == 0, "%d batches dropped", ph.BatchesDropped)
	add(ph.Messages == uint64(w.Batches), "received %d messages, want %d", ph.Messages, w.Batches)
	add(ph.DecodeErrors == 0, "%d decode errors", ph.DecodeErrors)
	add(ph.Gaps == 0 && ph.GiveUps == 0, "%d gaps, %d given up", ph.Gaps, ph.GiveUps)
	add(ph.SendErrors == 0, "%d send errors", ph.SendErrors)
	add(ph.IndexBlocks > 0, "the index is empty")
	ph.Valid = len(ph.Problems) == 0
}

// cpuTime returns the CPU time the process has used (user and system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quantile returns the q-quantile of sorted xs (nearest rank), 0 if empty.
func quantile(xs []int64, q float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	i := int(q*float64(len(xs))+0.5) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// ms converts ns to ms.
func ms(ns int64) float64 { return float64(ns) / 1e6 }

// rateNote describes an offered rate for progress lines.
func rateNote(rate float64) string {
	if rate <= 0 {
		return " at full speed"
	}
	return fmt.Sprintf(" at %.0f block events/s", rate)
}
