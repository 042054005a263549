package restartbench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/eventlog"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/cell/snapshot"
	"github.com/cellrouter/cellrouter/loadtest/eventgen"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Way is the figures of one way to ready, medians over the runs.
type Way struct {
	Seconds        float64       `json:"seconds"`
	PeakRSSBytes   int64         `json:"peak_rss_bytes"`
	HeapInuseBytes uint64        `json:"heap_inuse_bytes"`
	Runs           []ChildResult `json:"runs"`
}

// Report is the benchmark's result.
type Report struct {
	Requests int   `json:"requests"`
	Batches  int   `json:"batches"`
	Pods     int   `json:"pods"`
	Blocks   int64 `json:"blocks"`
	// EngineBlocks are the applier's tracked engine blocks (the hash map).
	EngineBlocks int `json:"engine_blocks"`
	// SnapshotBytes is the snapshot's size; WriteSeconds the median time
	// to write it (WriteRuns each), while nothing else runs.
	SnapshotBytes int64     `json:"snapshot_bytes"`
	WriteSeconds  float64   `json:"write_seconds"`
	WriteRuns     []float64 `json:"write_runs"`
	EventLogBytes int64     `json:"event_log_bytes"`
	// Load is restoring the snapshot; Replay applying every event again.
	Load   Way `json:"load"`
	Replay Way `json:"replay"`
	// SpeedUp is Replay.Seconds / Load.Seconds; PeakRSSRatio
	// Load.PeakRSSBytes / Replay.PeakRSSBytes.
	SpeedUp      float64 `json:"speed_up"`
	PeakRSSRatio float64 `json:"peak_rss_ratio"`
	// Machine conditions: CPUs, GOMAXPROCS and the 1-minute load average
	// at the start.
	CPUs       int     `json:"cpus"`
	GOMAXPROCS int     `json:"gomaxprocs"`
	LoadAvg1   float64 `json:"load_avg_1m"`
}

// Run builds the trace's final state, writes its snapshot and event log,
// and measures both ways in child processes.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Pods: cfg.Pods, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAvg1: loadAvg()}
	if err := cfg.Validate(); err != nil {
		return rep, err
	}
	if cfg.Child == nil {
		return rep, fmt.Errorf("restartbench: Config.Child is not set")
	}
	dir := cfg.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "restartbench-*")
		if err != nil {
			return rep, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		return rep, err
	}
	rep.Requests = len(recs)
	batches, err := eventgen.Generate(eventgen.Config{Pods: cfg.Pods, BlockSize: cfg.BlockSize, BlocksPerPod: cfg.BlocksPerPod,
		Model: cfg.Model, Seed: cfg.Seed}, recs)
	if err != nil {
		return rep, err
	}
	rep.Batches = len(batches)
	cfg.progress("%d requests, %d batches; writing the event log", len(recs), len(batches))
	logPath := filepath.Join(dir, "events.log")
	if rep.EventLogBytes, err = writeLog(logPath, batches); err != nil {
		return rep, err
	}
	snapPath, err := buildSnapshot(ctx, cfg, dir, batches, &rep)
	if err != nil {
		return rep, err
	}
	batches = nil
	runtime.GC()

	for i := 0; i < cfg.Runs; i++ {
		order := []string{"load", "replay"}
		if i%2 == 1 {
			order = []string{"replay", "load"}
		}
		for _, mode := range order {
			path := snapPath
			if mode == "replay" {
				path = logPath
			}
			res, err := runChild(ctx, cfg, mode, path)
			if err != nil {
				return rep, err
			}
			if res.Blocks != rep.Blocks {
				return rep, fmt.Errorf("restartbench: %s child holds %d blocks, the source %d", mode, res.Blocks, rep.Blocks)
			}
			cfg.progress("run %d %s: %.2fs, peak RSS %d MiB", i+1, mode, res.Seconds, res.PeakRSSBytes>>20)
			w := &rep.Load
			if mode == "replay" {
				w = &rep.Replay
			}
			w.Runs = append(w.Runs, res)
		}
	}
	for _, w := range []*Way{&rep.Load, &rep.Replay} {
		w.summarize()
	}
	if rep.Load.Seconds > 0 {
		rep.SpeedUp = rep.Replay.Seconds / rep.Load.Seconds
	}
	if rep.Replay.PeakRSSBytes > 0 {
		rep.PeakRSSRatio = float64(rep.Load.PeakRSSBytes) / float64(rep.Replay.PeakRSSBytes)
	}
	return rep, nil
}

// buildSnapshot applies the batches to a state as celld would and writes
// its snapshot cfg.Runs times (timed); it returns the last file's path.
func buildSnapshot(ctx context.Context, cfg Config, dir string, batches []events.Batch, rep *Report) (string, error) {
	st, err := newState(cfg)
	if err != nil {
		return "", err
	}
	defer st.ix.Close()
	for i := range batches {
		if err := st.a.ApplyBatch(ctx, &batches[i]); err != nil {
			return "", fmt.Errorf("restartbench: batch %d: %w", i, err)
		}
	}
	rep.Blocks = st.ix.Stats().Blocks
	for _, h := range st.a.ExportHolders() {
		rep.EngineBlocks += len(h.Blocks)
	}
	cfg.progress("final state: %d blocks, %d engine blocks; writing the snapshot", rep.Blocks, rep.EngineBlocks)
	id, err := cfg.identity()
	if err != nil {
		return "", err
	}
	snapDir := filepath.Join(dir, "snapshots")
	var path string
	for i := 0; i < cfg.Runs; i++ {
		start := time.Now()
		p, ws, err := snapshot.WriteFile(snapDir, snapshot.Owner(id.CellID, "restartbench"), 1, id, snapshot.Source{Index: st.ix, Applier: st.a}, start)
		if err != nil {
			return "", err
		}
		rep.WriteRuns = append(rep.WriteRuns, time.Since(start).Seconds())
		rep.SnapshotBytes, path = ws.Bytes, p
	}
	rep.WriteSeconds = median(rep.WriteRuns)
	return path, nil
}

// writeLog writes the batches as an event log (vLLM array form payloads).
func writeLog(path string, batches []events.Batch) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w, err := eventlog.NewWriter(f)
	if err != nil {
		return 0, err
	}
	var buf []byte
	for i := range batches {
		b := &batches[i]
		if buf, err = vllmwire.EncodePayload(buf[:0], b, vllmwire.FormArray); err != nil {
			return 0, err
		}
		if err := w.Write(eventlog.Record{Pod: b.Pod, Model: b.Model, Seq: b.Seq, Payload: buf}); err != nil {
			return 0, err
		}
	}
	if err := w.Flush(); err != nil {
		return 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), f.Sync()
}

// runChild runs one child process and parses its report; the process is
// killed when ChildTimeout passes or ctx ends.
func runChild(ctx context.Context, cfg Config, mode, path string) (ChildResult, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.ChildTimeout)
	defer cancel()
	cmd := cfg.Child(mode, path)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return ChildResult{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ChildResult{}, fmt.Errorf("restartbench: %s child: %w", mode, ctx.Err())
	}
	if err != nil {
		return ChildResult{}, fmt.Errorf("restartbench: %s child: %v: %s", mode, err, bytes.TrimSpace(errb.Bytes()))
	}
	var res ChildResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return res, fmt.Errorf("restartbench: %s child printed %q: %w", mode, out.String(), err)
	}
	return res, nil
}

func (w *Way) summarize() {
	var secs, rss, heap []float64
	for _, r := range w.Runs {
		secs = append(secs, r.Seconds)
		rss = append(rss, float64(r.PeakRSSBytes))
		heap = append(heap, float64(r.HeapInuseBytes))
	}
	w.Seconds, w.PeakRSSBytes, w.HeapInuseBytes = median(secs), int64(median(rss)), uint64(median(heap))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// loadAvg returns the 1-minute load average (0 when unknown).
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	var l float64
	fmt.Sscanf(string(data), "%f", &l)
	return l
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(out io.Writer) error {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	_, err := fmt.Fprintf(out, `restart to ready: %d requests, %d batches, %d pods
final state: %d blocks, %d engine blocks tracked
snapshot: %.1f MiB, written in %.2f s (median of %d); event log %.1f MiB
                      seconds   peak RSS MiB   heap in use MiB
  load snapshot     %9.2f   %12.0f   %15.0f
  replay from empty %9.2f   %12.0f   %15.0f
  replay / load: %.1fx time; load / replay peak RSS: %.2f
machine: %d CPUs, GOMAXPROCS %d, load average %.2f at the start (medians of %d runs each, alternated)
`, r.Requests, r.Batches, r.Pods, r.Blocks, r.EngineBlocks,
		mib(r.SnapshotBytes), r.WriteSeconds, len(r.WriteRuns), mib(r.EventLogBytes),
		r.Load.Seconds, mib(r.Load.PeakRSSBytes), mib(int64(r.Load.HeapInuseBytes)),
		r.Replay.Seconds, mib(r.Replay.PeakRSSBytes), mib(int64(r.Replay.HeapInuseBytes)),
		r.SpeedUp, r.PeakRSSRatio, r.CPUs, r.GOMAXPROCS, r.LoadAvg1, len(r.Load.Runs))
	return err
}
