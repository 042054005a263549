package cell

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/natsjs"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/snapshot"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// runCell starts a cell and returns it with a stop function that ends Run
// gracefully and waits for it (the cleanup does so too, once).
func runCell(t *testing.T, cfg Config, log io.Writer, opts ...Option) (*Cell, func()) {
	t.Helper()
	if log == nil {
		log = io.Discard
	}
	c, err := New(cfg, slog.New(slog.NewTextHandler(log, nil)), opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	return c, stop
}

// indexContents is an index's exact state by pod id: block -> pod -> tiers.
func indexContents(t *testing.T, ix *index.Index) map[index.BlockHash]map[string]index.TierSet {
	t.Helper()
	ids := map[index.Slot]string{}
	for _, p := range ix.LivePods() {
		ids[p.Slot] = p.ID
	}
	out := map[index.BlockHash]map[string]index.TierSet{}
	if err := ix.Export(func(bs []index.ExportedBlock) error {
		for _, b := range bs {
			m := map[string]index.TierSet{}
			for _, h := range b.Holders {
				m[ids[h.Slot]] = h.Tiers
			}
			out[b.Hash] = m
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// chainBatch is batch i of a test engine: it extends one chain by a block,
// copies every fourth block to the CPU and drops every seventh from the
// CPU again, so restored tiers and removals are exercised.
func chainBatch(i int) *events.Batch {
	h := uint64(1000 + i)
	parent := uint64(0)
	if i > 0 {
		parent = h - 1
	}
	b := storedBatch([]uint64{h}, parent)
	if i%4 == 0 {
		cpu := b.Events[0]
		cpu.Medium = "CPU"
		b.Events = append(b.Events, cpu)
	}
	if i%7 == 6 {
		b.Events = append(b.Events, events.Event{Kind: events.KindBlockRemoved, BlockHashes: []uint64{h - 2}, Medium: "CPU"})
	}
	return b
}

// referenceIndex applies every batch exactly once to a fresh index through
// an applier configured like cfg's cell.
func referenceIndex(t *testing.T, cfg Config, pod string, bs []*events.Batch) *index.Index {
	t.Helper()
	ix, err := index.New(cfg.indexConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ix.Close)
	a, err := events.NewApplier(cfg.eventsConfig(), ix, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range bs {
		b.Pod, b.Seq = pod, uint64(i)
		if err := a.ApplyBatch(context.Background(), b); err != nil {
			t.Fatalf("reference batch %d: %v", i, err)
		}
	}
	return ix
}

// TestSnapshotRestartCatchesUpOverZMQ stops a cell that indexes a vLLM
// publisher, lets the engine go on while the cell is down, and starts the
// cell again from its shutdown snapshot: it resumes the pod after the
// snapshot's sequence number through the real replay socket, so the index
// equals one that applied every batch exactly once, and the restored
// batches are neither replayed nor cleared.
func TestSnapshotRestartCatchesUpOverZMQ(t *testing.T) {
	pub, err := vllmpub.New(vllmpub.DefaultConfig("pod-s", "m"))
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close()
	cfg := testConfig()
	cfg.Events.DefaultModel = "m"
	cfg.Pods = []PodConfig{{ID: "pod-s", Model: "m", ZMQEndpoint: pub.Endpoint(), ReplayEndpoint: pub.ReplayEndpoint()}}
	cfg.Snapshot.Dir = t.TempDir()
	cfg.Snapshot.Interval = 0

	var all []*events.Batch
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			b := chainBatch(i)
			all = append(all, b)
			if _, err := pub.Publish(b); err != nil {
				t.Fatalf("publish %d: %v", i, err)
			}
		}
	}
	a, stopA := runCell(t, cfg, nil)
	waitFor(t, "first cell ready", func() bool { code, _ := get(t, "http://"+a.HTTPAddr()+"/readyz"); return code == 200 })
	waitFor(t, "subscription", pub.Subscribed)
	publish(0, 40)
	waitFor(t, "40 batches applied", func() bool { return a.Applier().Counters().Batches.Load() == 40 })
	stopA()
	files, _ := snapshot.List(cfg.Snapshot.Dir)
	if len(files) != 1 {
		t.Fatalf("snapshot files after shutdown: %v, want one", files)
	}

	// The engine goes on while no cell listens: only its replay buffer
	// keeps these.
	publish(40, 65)

	var logs servertest.LogBuffer
	b, _ := runCell(t, cfg, &logs)
	waitFor(t, "restarted cell ready", func() bool { code, _ := get(t, "http://"+b.HTTPAddr()+"/readyz"); return code == 200 })
	ref := referenceIndex(t, cfg, "pod-s", all)
	want := indexContents(t, ref)
	waitFor(t, "caught up", func() bool { return reflect.DeepEqual(indexContents(t, b.Index()), want) })
	ct := b.Applier().Counters()
	if got := ct.Batches.Load(); got != 25 {
		t.Errorf("batches applied after restart: got %d, want the 25 published while down", got)
	}
	if ct.Restarts.Load() != 0 || ct.Clears.Load() != 0 {
		t.Errorf("restarts %d, clears %d after the restore, want 0", ct.Restarts.Load(), ct.Clears.Load())
	}
	if !strings.Contains(logs.String(), "snapshot: loaded") {
		t.Errorf("log lacks the load: %s", logs.String())
	}
	_, metrics := get(t, "http://"+b.HTTPAddr()+"/metrics")
	if !strings.Contains(metrics, `cellrouter_snapshot_load_info{cell="cell-0",outcome="file"} 1`) {
		t.Errorf("/metrics lacks the file load outcome")
	}

	// Live batches continue on the restored chain.
	publish(65, 70)
	want = indexContents(t, referenceIndex(t, cfg, "pod-s", all))
	waitFor(t, "live after restore", func() bool { return reflect.DeepEqual(indexContents(t, b.Index()), want) })
}

// TestSnapshotCorruptStartsEmpty starts a cell over a directory whose only
// snapshot is damaged or foreign: it is refused with a logged reason and
// the cell starts with an empty index.
func TestSnapshotCorruptStartsEmpty(t *testing.T) {
	src := withPods(testConfig(), "pod-c")
	src.Snapshot.Dir = t.TempDir()
	// A real snapshot of a cell holding a few blocks.
	a, stopA := runCell(t, src, nil)
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		b := chainBatch(i)
		b.Pod, b.Seq = "pod-c", uint64(i)
		if err := a.Applier().ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	stopA()
	files, _ := snapshot.List(src.Snapshot.Dir)
	if len(files) != 1 {
		t.Fatalf("snapshot files: %v", files)
	}
	good, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		mutate func(cfg *Config, data []byte) []byte
		reason string
	}{
		{"flipped byte", func(_ *Config, d []byte) []byte { d[len(d)/2] ^= 0x10; return d }, "checksum mismatch"},
		{"truncated", func(_ *Config, d []byte) []byte { return d[:len(d)-7] }, "truncated"},
		{"wrong version", func(_ *Config, d []byte) []byte { d[8] = 99; return d }, "format version 99"},
		{"foreign cell", func(cfg *Config, d []byte) []byte { cfg.CellID = "cell-other"; return d }, "written by cell"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := src
			cfg.Snapshot.Dir = t.TempDir()
			data := c.mutate(&cfg, append([]byte(nil), good...))
			if err := os.WriteFile(filepath.Join(cfg.Snapshot.Dir, filepath.Base(files[0])), data, 0o644); err != nil {
				t.Fatal(err)
			}
			var logs servertest.LogBuffer
			cl, _ := runCell(t, cfg, &logs)
			if n := cl.Index().Stats().Blocks; n != 0 {
				t.Fatalf("index holds %d blocks after a refused snapshot, want 0", n)
			}
			if !strings.Contains(logs.String(), "snapshot: file refused") || !strings.Contains(logs.String(), c.reason) {
				t.Fatalf("log lacks the refusal (%q): %s", c.reason, logs.String())
			}
			_, metrics := get(t, "http://"+cl.HTTPAddr()+"/metrics")
			if !strings.Contains(metrics, `outcome="refused"} 1`) {
				t.Fatalf("/metrics lacks the refused outcome")
			}
		})
	}
}

// TestBootstrapFromReplica starts a second replica of a cell that has no
// snapshot of its own: it fetches one from the first over a real gRPC
// socket (CellService.StreamSnapshot, with an admin API key) and starts
// with the same index. A replica without a valid key is refused and
// starts empty.
func TestBootstrapFromReplica(t *testing.T) {
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.yaml")
	adminKey, inferKey := "admin-key-1", "infer-key-1"
	doc := "tenants: [{name: ops}]\nkeys:\n" +
		"  - {sha256: " + auth.HashKey(adminKey).String() + ", tenant: ops, scopes: [admin]}\n" +
		"  - {sha256: " + auth.HashKey(inferKey).String() + ", tenant: ops, scopes: [inference]}\n"
	if err := os.WriteFile(keys, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := withPods(testConfig(), "pod-b")
	cfg.Auth.KeyFile = keys
	a, _ := runCell(t, cfg, nil)
	ctx := context.Background()
	// Enough blocks for several chunks.
	for i := 0; i < 3000; i++ {
		b := chainBatch(i)
		b.Pod, b.Seq = "pod-b", uint64(i)
		if err := a.Applier().ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	want := indexContents(t, a.Index())

	writeKey := func(k string) string {
		p := filepath.Join(t.TempDir(), "key")
		if err := os.WriteFile(p, []byte(k+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	rc := testConfig()
	rc.Snapshot.BootstrapFrom = a.GRPCAddr()
	rc.Snapshot.BootstrapKeyFile = writeKey(adminKey)
	b, _ := runCell(t, rc, nil)
	if got := indexContents(t, b.Index()); !reflect.DeepEqual(got, want) {
		t.Fatalf("bootstrapped index: %d blocks, want %d as the replica's", len(got), len(want))
	}
	last, ok := b.Applier().Resume("pod-b", -1)
	if !ok || last != 2999 {
		t.Fatalf("bootstrapped holder resumes at %d %v, want 2999", last, ok)
	}

	for _, key := range []string{inferKey, "wrong-key"} {
		rc.Snapshot.BootstrapKeyFile = writeKey(key)
		var logs servertest.LogBuffer
		c, _ := runCell(t, rc, &logs)
		if n := c.Index().Stats().Blocks; n != 0 {
			t.Fatalf("key %q: index holds %d blocks, want an empty start", key, n)
		}
		if !strings.Contains(logs.String(), "bootstrap from a replica failed") {
			t.Fatalf("key %q: log lacks the failure: %s", key, logs.String())
		}
	}
}

// TestSnapshotConfigValidate names the bad field.
func TestSnapshotConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name  string
		set   func(*SnapshotConfig)
		field string
	}{
		{"keep", func(s *SnapshotConfig) { s.Keep = 0 }, "snapshot.keep"},
		{"interval", func(s *SnapshotConfig) { s.Interval = -time.Second }, "snapshot.interval"},
		{"bootstrap", func(s *SnapshotConfig) { s.BootstrapFrom = "no-port" }, "snapshot.bootstrap_from"},
		{"timeout", func(s *SnapshotConfig) { s.BootstrapTimeout = 0 }, "snapshot.bootstrap_timeout"},
	} {
		cfg := testConfig()
		c.set(&cfg.Snapshot)
		err := cfg.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%s: got %v, want an error naming %s", c.name, err, c.field)
		}
	}
}

// TestSnapshotRestartResumesJetStream restarts a cell fed by JetStream from
// its shutdown snapshot: the durable consumer is recreated at the
// snapshot's stream position, so only the batches published while the
// cell was down are applied, none twice and nothing cleared.
func TestSnapshotRestartResumesJetStream(t *testing.T) {
	ns := startNATS(t)
	cfg := withPods(testConfig(), "pod-j")
	cfg.Events.DefaultModel = "m"
	cfg.NATS.URL = ns.ClientURL()
	cfg.NATS.CreateStream = true
	cfg.Snapshot.Dir = t.TempDir()
	cfg.Snapshot.Interval = 0

	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	p := natsjs.NewPublisher(js, cfg.NATS.SubjectPrefix)
	var all []*events.Batch
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			b := chainBatch(i)
			b.Pod, b.Model = "pod-j", "m"
			all = append(all, b)
			if _, err := p.Publish(context.Background(), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, stopA := runCell(t, cfg, nil)
	waitFor(t, "first cell ready", func() bool { code, _ := get(t, "http://"+a.HTTPAddr()+"/readyz"); return code == 200 })
	publish(0, 30)
	waitFor(t, "30 batches applied", func() bool { return a.Applier().Counters().Batches.Load() == 30 })
	stopA()
	publish(30, 42)

	b, _ := runCell(t, cfg, nil)
	waitFor(t, "restarted cell ready", func() bool { code, _ := get(t, "http://"+b.HTTPAddr()+"/readyz"); return code == 200 })
	want := indexContents(t, referenceIndex(t, cfg, "pod-j", all))
	waitFor(t, "caught up", func() bool { return reflect.DeepEqual(indexContents(t, b.Index()), want) })
	ct := b.Applier().Counters()
	if got := ct.Batches.Load(); got != 12 {
		t.Errorf("batches applied after restart: got %d, want the 12 published while down", got)
	}
	if ct.Restarts.Load() != 0 || ct.Clears.Load() != 0 {
		t.Errorf("restarts %d, clears %d after the restore, want 0", ct.Restarts.Load(), ct.Clears.Load())
	}
}

// TestSnapshotLoopWritesAfterEvents checks the owned writer: with
// every_events a snapshot appears once that many batches were applied,
// and the cell's shutdown writes one more.
func TestSnapshotLoopWritesAfterEvents(t *testing.T) {
	cfg := withPods(testConfig(), "pod-e")
	cfg.Snapshot.Dir = t.TempDir()
	cfg.Snapshot.Interval = 0
	cfg.Snapshot.EveryEvents = 10
	cfg.Snapshot.Keep = 5
	var logs servertest.LogBuffer
	c, stop := runCell(t, cfg, &logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	files := func() int { f, _ := snapshot.List(cfg.Snapshot.Dir); return len(f) }
	ctx := context.Background()
	for i := 0; i < 9; i++ {
		b := chainBatch(i)
		b.Pod, b.Seq = "pod-e", uint64(i)
		if err := c.Applier().ApplyBatch(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// Nine batches: below the threshold for at least two checks.
	time.Sleep(2500 * time.Millisecond)
	if n := files(); n != 0 {
		t.Fatalf("%d snapshots after 9 batches, want 0", n)
	}
	b := chainBatch(9)
	b.Pod, b.Seq = "pod-e", 9
	if err := c.Applier().ApplyBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a snapshot after 10 batches", func() bool { return files() == 1 })
	stop()
	if n := files(); n != 2 {
		t.Fatalf("%d snapshots after shutdown, want 2", n)
	}
	id, _ := cfg.snapshotIdentity()
	snap, _, _, err := snapshot.LoadNewest(cfg.Snapshot.Dir, id, 0)
	if err != nil || snap.Blocks != 10 || snap.Holders != 1 {
		t.Fatalf("newest snapshot: %v, %+v", err, snap)
	}
}

// TestSnapshotRestartEngineRestarted restores a cell whose engine
// restarted while the cell was down: the engine's numbers start again
// below the snapshot's, so the cell must not take its batches for
// duplicates. The first live batch reveals it, and the pod is rebuilt from
// the new engine's replay buffer alone.
func TestSnapshotRestartEngineRestarted(t *testing.T) {
	pub, err := vllmpub.New(vllmpub.DefaultConfig("pod-r", "m"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Events.DefaultModel = "m"
	cfg.Pods = []PodConfig{{ID: "pod-r", Model: "m", ZMQEndpoint: pub.Endpoint(), ReplayEndpoint: pub.ReplayEndpoint()}}
	cfg.Snapshot.Dir = t.TempDir()
	cfg.Snapshot.Interval = 0
	a, stopA := runCell(t, cfg, nil)
	waitFor(t, "first cell ready", func() bool { code, _ := get(t, "http://"+a.HTTPAddr()+"/readyz"); return code == 200 })
	waitFor(t, "subscription", pub.Subscribed)
	for i := 0; i < 30; i++ {
		if _, err := pub.Publish(chainBatch(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "30 batches applied", func() bool { return a.Applier().Counters().Batches.Load() == 30 })
	stopA()
	pub.Close()

	// The engine comes back empty, numbering from 0, with other blocks.
	pub2, err := vllmpub.New(vllmpub.DefaultConfig("pod-r", "m"))
	if err != nil {
		t.Fatal(err)
	}
	defer pub2.Close()
	var fresh []*events.Batch
	publish := func(from, to int) {
		for i := from; i < to; i++ {
			b := chainBatch(500 + i)
			if i == 0 {
				b = storedBatch([]uint64{1500}, 0)
			}
			fresh = append(fresh, b)
			if _, err := pub2.Publish(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(0, 5)
	cfg.Pods[0].ZMQEndpoint, cfg.Pods[0].ReplayEndpoint = pub2.Endpoint(), pub2.ReplayEndpoint()
	b, _ := runCell(t, cfg, nil)
	waitFor(t, "restarted cell ready", func() bool { code, _ := get(t, "http://"+b.HTTPAddr()+"/readyz"); return code == 200 })
	waitFor(t, "subscription", pub2.Subscribed)
	publish(5, 6)
	want := indexContents(t, referenceIndex(t, cfg, "pod-r", fresh))
	waitFor(t, "rebuilt from the new engine", func() bool { return reflect.DeepEqual(indexContents(t, b.Index()), want) })
	if r := b.Applier().Counters().Restarts.Load(); r != 1 {
		t.Errorf("restarts seen: got %d, want 1", r)
	}
}
