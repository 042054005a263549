package restartbench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/eventlog"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// ChildResult is what a child process reports, as JSON on its stdout.
type ChildResult struct {
	// Mode is "load" or "replay".
	Mode string `json:"mode"`
	// Seconds is the wall time from the start of the work to a ready index.
	Seconds float64 `json:"seconds"`
	// Blocks is the number of blocks the index holds at the end.
	Blocks int64 `json:"blocks"`
	// PeakRSSBytes is the process's peak resident memory (VmHWM).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	// HeapInuseBytes is the Go heap in use at the end, after a GC.
	HeapInuseBytes uint64 `json:"heap_inuse_bytes"`
}

// state is a fresh index with a learner and an applier, as celld builds
// them.
type state struct {
	ix *index.Index
	a  *events.Applier
}

func newState(cfg Config) (*state, error) {
	ic := index.DefaultConfig()
	ic.ExpectedBlocks = min(cfg.Pods*cfg.BlocksPerPod, ic.MaxBlocks)
	ix, err := index.New(ic)
	if err != nil {
		return nil, err
	}
	if _, err := index.NewLearner(ix, index.DefaultLearnConfig()); err != nil {
		ix.Close()
		return nil, err
	}
	a, err := events.NewApplier(cfg.eventsConfig(), ix, nil, nil)
	if err != nil {
		ix.Close()
		return nil, err
	}
	return &state{ix: ix, a: a}, nil
}

// RunChild does one child's work: mode "load" restores the snapshot at
// path, "replay" applies the event log at path. It returns the result.
func RunChild(ctx context.Context, cfg Config, mode, path string) (ChildResult, error) {
	res := ChildResult{Mode: mode}
	start := time.Now()
	st, err := newState(cfg)
	if err != nil {
		return res, err
	}
	defer st.ix.Close()
	switch mode {
	case "load":
		id, err := cfg.identity()
		if err != nil {
			return res, err
		}
		snap, err := snapshot.LoadFile(path, id, 0)
		if err != nil {
			return res, err
		}
		if _, err := snap.Restore(st.ix, st.a, time.Now()); err != nil {
			return res, err
		}
	case "replay":
		if err := replayLog(ctx, st.a, path); err != nil {
			return res, err
		}
	default:
		return res, fmt.Errorf("restartbench: unknown child mode %q", mode)
	}
	res.Seconds = time.Since(start).Seconds()
	res.Blocks = st.ix.Stats().Blocks
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.HeapInuseBytes = ms.HeapInuse
	runtime.KeepAlive(st) // the state is what the heap figure is about
	res.PeakRSSBytes, err = peakRSS()
	return res, err
}

// replayLog decodes every record of the event log at path and applies it.
func replayLog(ctx context.Context, a *events.Applier, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	r, err := eventlog.NewReader(bufio.NewReaderSize(f, 1<<20))
	if err != nil {
		return err
	}
	var b events.Batch
	lim := vllmwire.DefaultLimits()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := vllmwire.DecodePayload(rec.Payload, &b, lim); err != nil {
			return err
		}
		b.Pod, b.Model, b.Seq = rec.Pod, rec.Model, rec.Seq
		if err := a.ApplyBatch(ctx, &b); err != nil {
			return fmt.Errorf("restartbench: batch %d of %s: %w", rec.Seq, rec.Pod, err)
		}
	}
}

// peakRSS reads the process's peak resident set size from /proc.
func peakRSS() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("restartbench: VmHWM %q: %w", rest, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("restartbench: no VmHWM in /proc/self/status")
}
