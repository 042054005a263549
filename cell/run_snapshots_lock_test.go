package cell

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// snapshotHolderEnv makes the test binary, re-executed by a test, run a
// cell on the snapshot folder it names, index snapshotHolderBatches
// batches, write a snapshot, print "ready" and serve until killed (see
// TestMain).
const snapshotHolderEnv = "CELL_SNAPSHOT_HOLDER_DIR"

const snapshotHolderBatches = 8

func TestMain(m *testing.M) {
	if dir := os.Getenv(snapshotHolderEnv); dir != "" {
		if err := runSnapshotHolder(dir); err != nil {
			fmt.Println("error:", err)
			os.Exit(2)
		}
		select {} // serving until SIGKILL
	}
	os.Exit(m.Run())
}

// holderBatches are the batches the holder indexes for pod "pod-c".
func holderBatches() []*events.Batch {
	var bs []*events.Batch
	for i := range snapshotHolderBatches {
		b := chainBatch(i)
		b.Pod, b.Seq = "pod-c", uint64(i)
		bs = append(bs, b)
	}
	return bs
}

func holderConfig(dir, replica string) Config {
	cfg := withPods(testConfig(), "pod-c")
	cfg.Snapshot.Dir = dir
	cfg.Snapshot.Interval = 0 // only the snapshot the holder writes, and at shutdown
	cfg.Replica.ID = replica
	return cfg
}

func runSnapshotHolder(dir string) error {
	c, err := New(holderConfig(dir, "child"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return err
	}
	go c.Run(context.Background())
	for _, b := range holderBatches() {
		if err := c.Applier().ApplyBatch(context.Background(), b); err != nil {
			return err
		}
	}
	c.writeSnapshot("test")
	if files, _ := snapshot.List(dir); len(files) != 1 {
		return fmt.Errorf("the holder's snapshot was not written: %v", files)
	}
	fmt.Println("ready")
	return nil
}

// TestSnapshotFolderHeldByAnotherProcess is failure 5 with real
// processes: a cell process holds a snapshot folder and has written a
// snapshot into it; a second cell given the same folder refuses to start,
// naming the folder and the holder; the holder is SIGKILLed (no shutdown
// snapshot, no unlock), the kernel releases the lock, and a cell started
// on the folder loads the dead one's snapshot instead of starting empty.
func TestSnapshotFolderHeldByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), snapshotHolderEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if line, err := bufio.NewReader(out).ReadString('\n'); strings.TrimSpace(line) != "ready" {
		t.Fatalf("the holder said %q (%v)", line, err)
	}

	_, err = New(holderConfig(dir, "parent"), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if !errors.Is(err, snapshot.ErrLocked) {
		t.Fatalf("New on a held folder: %v, want snapshot.ErrLocked", err)
	}
	for _, want := range []string{"snapshot.dir", dir, "pid " + strconv.Itoa(cmd.Process.Pid), `replica "child"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if files, _ := snapshot.List(dir); len(files) != 1 {
		t.Fatalf("the refused cell touched the holder's files: %v", files)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	c, stop := runCell(t, holderConfig(dir, "parent"), nil)
	want := indexContents(t, referenceIndex(t, holderConfig(dir, "ref"), "pod-c", holderBatches()))
	if got := indexContents(t, c.ix); len(got) == 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("the restarted cell holds %d blocks, want the dead holder's %d", len(got), len(want))
	}
	// It writes its own files beside the dead holder's, and keeps both.
	stop()
	files, _ := snapshot.List(dir)
	if len(files) != 2 {
		t.Fatalf("after the restarted cell's shutdown snapshot: %v", files)
	}
}

// TestSnapshotFolderLockReleasedAfterRun: a cell that ran and stopped
// releases its folder, so the next cell on it starts (and loads it).
func TestSnapshotFolderLockReleasedAfterRun(t *testing.T) {
	dir := t.TempDir()
	a, stopA := runCell(t, holderConfig(dir, "a"), nil)
	if _, err := New(holderConfig(dir, "b"), nil); !errors.Is(err, snapshot.ErrLocked) {
		t.Fatalf("New beside a running cell: %v, want snapshot.ErrLocked", err)
	}
	for _, b := range holderBatches() {
		if err := a.Applier().ApplyBatch(context.Background(), b); err != nil {
			t.Fatal(err)
		}
	}
	stopA()
	b, _ := runCell(t, holderConfig(dir, "b"), nil)
	if got := indexContents(t, b.ix); len(got) == 0 {
		t.Fatal("the next cell on the folder loaded nothing")
	}
}
