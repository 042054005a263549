package cell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// indexState is the index and what writes it: the parts a snapshot
// restores, built together so that a failed restore throws them all away.
type indexState struct {
	ix      *index.Index
	learner *index.Learner
	reg     *events.Registry
	applier *events.Applier
}

// newIndexState builds an empty index, learner, registry and applier.
func (c *Cell) newIndexState() (*indexState, error) {
	cfg := c.cfg
	st := &indexState{}
	var err error
	if st.ix, err = index.New(cfg.indexConfig()); err != nil {
		return nil, err
	}
	if st.learner, err = index.NewLearner(st.ix, cfg.learnConfig()); err != nil {
		st.ix.Close()
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if st.reg, err = events.NewRegistry(cfg.eventsConfig(), time.Now()); err != nil {
		st.ix.Close()
		return nil, err
	}
	ec := cfg.eventsConfig()
	ec.OnDrop = c.warn.onDrop
	if st.applier, err = events.NewApplier(ec, st.ix, st.reg, nil); err != nil {
		st.ix.Close()
		return nil, err
	}
	return st, nil
}

// buildIndexState sets the cell's index state: restored from the newest
// valid local snapshot, else from a live replica (snapshot.bootstrap_from),
// else empty. A snapshot is restored into a fresh state that replaces the
// empty one only when the restore succeeded, so the cell is never
// half-loaded; every refusal is logged with its reason.
func (c *Cell) buildIndexState() error {
	if err := c.lockSnapshots(); err != nil {
		return err
	}
	st, err := c.newIndexState()
	if err != nil {
		return err
	}
	if snap, source := c.findSnapshot(); snap != nil {
		start := time.Now()
		res, err := snap.Restore(st.ix, st.applier, start)
		if err != nil {
			c.log.Error("snapshot: restore failed; starting with an empty index", "source", source, "err", err)
			c.snapm.setLoad(loadFailed, 0, 0)
			st.ix.Close()
			if st, err = c.newIndexState(); err != nil {
				return err
			}
		} else {
			took := time.Since(start) + c.snapm.decodeTime
			c.snapm.setLoad(source.outcome, took, snap.Blocks)
			c.snapm.setCreated(snap.Created)
			c.resumeStream = snap.StreamSeq
			c.log.Info("snapshot: loaded", "source", source.name, "blocks", snap.Blocks, "pods", snap.Pods,
				"holders", snap.Holders, "engine_blocks", snap.EngineBlocks, "bytes", snap.Bytes,
				"age", time.Since(snap.Created).Round(time.Millisecond), "took", took.Round(time.Millisecond),
				"cap_drops", res.CapDrops)
		}
	}
	c.ix, c.learner, c.reg, c.applier = st.ix, st.learner, st.reg, st.applier
	return nil
}

// snapSource says where a snapshot came from.
type snapSource struct {
	name    string
	outcome string
}

// findSnapshot returns the snapshot to start from, or nil: the newest valid
// file in snapshot.dir, else one fetched from snapshot.bootstrap_from.
func (c *Cell) findSnapshot() (*snapshot.Snapshot, snapSource) {
	sc := c.cfg.Snapshot
	if sc.Dir == "" && sc.BootstrapFrom == "" {
		return nil, snapSource{}
	}
	id, err := c.cfg.snapshotIdentity()
	if err != nil {
		c.log.Error("snapshot: cannot identify this cell's snapshots; starting empty", "err", err)
		c.snapm.setLoad(loadFailed, 0, 0)
		return nil, snapSource{}
	}
	outcome := loadNone
	if sc.Dir != "" {
		start := time.Now()
		snap, path, refused, err := snapshot.LoadNewest(sc.Dir, id, sc.MaxBytes)
		for _, r := range refused {
			c.log.Error("snapshot: file refused", "path", r.Path, "err", r.Err)
			c.snapm.refused.Add(1)
			outcome = loadRefused
		}
		switch {
		case err == nil:
			c.snapm.decodeTime = time.Since(start)
			return snap, snapSource{name: path, outcome: loadFile}
		case !errors.Is(err, snapshot.ErrNone):
			c.log.Error("snapshot: cannot read the snapshot directory", "dir", sc.Dir, "err", err)
			outcome = loadFailed
		}
	}
	if sc.BootstrapFrom != "" {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), sc.BootstrapTimeout)
		snap, err := c.bootstrap(ctx, sc, id)
		cancel()
		if err == nil {
			c.snapm.decodeTime = time.Since(start)
			return snap, snapSource{name: "peer " + sc.BootstrapFrom, outcome: loadPeer}
		}
		c.log.Error("snapshot: bootstrap from a replica failed", "from", sc.BootstrapFrom, "err", err)
		c.snapm.refused.Add(1)
		outcome = loadFailed
	}
	if outcome == loadNone {
		c.log.Info("snapshot: none to load; starting with an empty index", "dir", sc.Dir)
	} else {
		c.log.Error("snapshot: no valid snapshot; starting with an empty index", "dir", sc.Dir)
	}
	c.snapm.setLoad(outcome, 0, 0)
	return nil, snapSource{}
}

// writeSnapshot writes a snapshot into snapshot.dir and records the
// outcome. why is logged ("interval", "events", "shutdown").
func (c *Cell) writeSnapshot(why string) {
	id, err := c.cfg.snapshotIdentity()
	if err == nil {
		start := time.Now()
		var path string
		var st snapshot.WriteStats
		path, st, err = snapshot.WriteFile(c.cfg.Snapshot.Dir, c.snapshotOwner(), c.cfg.Snapshot.Keep, id, c.snapshotSource(), start)
		if err == nil {
			took := time.Since(start)
			c.snapm.wrote(start, took, st.Bytes)
			c.log.Info("snapshot: written", "why", why, "path", path, "blocks", st.Blocks, "pods", st.Pods,
				"holders", st.Holders, "bytes", st.Bytes, "took", took.Round(time.Millisecond))
			return
		}
	}
	c.snapm.writeFailed.Add(1)
	c.log.Error("snapshot: write failed", "why", why, "dir", c.cfg.Snapshot.Dir, "err", err)
}

// snapshotSource is what a snapshot of this cell is taken of.
func (c *Cell) snapshotSource() snapshot.Source {
	src := snapshot.Source{Index: c.ix, Applier: c.applier}
	if c.streamPos != nil {
		src.StreamSeq = c.streamPos
	}
	return src
}

// snapshotLoop writes a snapshot every snapshot.interval, and when
// snapshot.every_events batches were applied since the last one, until ctx
// ends. Run writes the last one after the transports stopped.
func (c *Cell) snapshotLoop(ctx context.Context) {
	sc := c.cfg.Snapshot
	var interval, events <-chan time.Time
	if sc.Interval > 0 {
		t := time.NewTicker(sc.Interval)
		defer t.Stop()
		interval = t.C
	}
	if sc.EveryEvents > 0 {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		events = t.C
	}
	var last uint64 // batches applied when the last snapshot was taken (none yet: 0)
	for {
		select {
		case <-ctx.Done():
			return
		case <-interval:
			last = c.applier.Counters().Batches.Load()
			c.writeSnapshot("interval")
		case <-events:
			if n := c.applier.Counters().Batches.Load(); n-last >= sc.EveryEvents {
				last = n
				c.writeSnapshot("events")
			}
		}
	}
}

// streamSnapshot writes a snapshot of the cell to w, for StreamSnapshot.
func (c *Cell) streamSnapshot(w io.Writer) (snapshot.WriteStats, error) {
	id, err := c.cfg.snapshotIdentity()
	if err != nil {
		return snapshot.WriteStats{}, err
	}
	st, err := snapshot.Write(w, id, c.snapshotSource(), time.Now())
	if err == nil {
		c.snapm.served.Add(1)
	}
	return st, err
}
