package restartbench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// childEnv tells the test binary, started as a child by TestRun, to be one.
const childEnv = "RESTARTBENCH_TEST_CHILD"

// smallConfig is a slice of the trace on 8 pods.
func smallConfig(path string) Config {
	cfg := DefaultConfig()
	cfg.TracePath, cfg.MaxRequests, cfg.Pods, cfg.BlocksPerPod, cfg.Runs = path, 150, 8, 2048, 2
	return cfg
}

// TestMain makes the test binary one of TestRun's child processes when
// childEnv says so.
func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		os.Exit(child(v))
	}
	os.Exit(m.Run())
}

// child runs RunChild as "mode=path" says and prints its result.
func child(v string) int {
	mode, path, _ := strings.Cut(v, "=")
	path2, err := trace.Locate(trace.DefaultPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cfg := smallConfig(path2)
	res, err := RunChild(context.Background(), cfg, mode, path)
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(res)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestRun runs the benchmark on a slice of the trace with real child
// processes: both ways must end with the source's blocks (Run checks) and
// report their figures.
func TestRun(t *testing.T) {
	path, err := trace.Locate(trace.DefaultPath)
	if err != nil {
		t.Fatalf("trace: %v", err)
	}
	cfg := smallConfig(path)
	cfg.Child = func(mode, path string) *exec.Cmd {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"="+mode+"="+path)
		return cmd
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Blocks == 0 || rep.SnapshotBytes == 0 || rep.EventLogBytes == 0 || len(rep.WriteRuns) != 2 {
		t.Fatalf("report: %+v", rep)
	}
	for _, w := range []Way{rep.Load, rep.Replay} {
		if len(w.Runs) != 2 || w.Seconds <= 0 || w.PeakRSSBytes <= 0 || w.HeapInuseBytes == 0 {
			t.Fatalf("way: %+v", w)
		}
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb); err != nil || !strings.Contains(sb.String(), "load snapshot") {
		t.Fatalf("table: %v %q", err, sb.String())
	}
}
