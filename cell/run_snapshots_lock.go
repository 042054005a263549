package cell

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// A snapshot folder belongs to one cell replica: New locks it (flock on
// snapshot.Dir/.snapshot.lock, which the kernel releases when the process
// dies, SIGKILL included) before loading from it, and a second process
// given the same folder refuses to start, naming the folder and the
// holder. Two cells sharing a folder used to prune each other's files and
// delete each other's temporary files, so that a cell restarted after a
// crash found nothing. The files also carry the replica's owner tag
// (snapshot.Owner), so a writer prunes only its own.

// lockSnapshots takes the snapshot folder's lock (nothing without a
// folder).
func (c *Cell) lockSnapshots() error {
	if c.cfg.Snapshot.Dir == "" {
		return nil
	}
	l, err := snapshot.LockDir(c.cfg.Snapshot.Dir, snapshot.Holder{Cell: c.cfg.CellID, Replica: c.cfg.Replica.ID})
	if err != nil {
		return fmt.Errorf("cell: snapshot.dir: %w", err)
	}
	c.snapLock = l
	return nil
}

// unlockSnapshots releases the folder (after the last snapshot, or when
// New fails).
func (c *Cell) unlockSnapshots() {
	if err := c.snapLock.Unlock(); err != nil {
		c.log.Warn("snapshot: releasing the folder lock failed", "dir", c.cfg.Snapshot.Dir, "err", err)
	}
}

// snapshotOwner tags this replica's snapshot files.
func (c *Cell) snapshotOwner() string { return snapshot.Owner(c.cfg.CellID, c.cfg.Replica.ID) }
