package cell

import (
	"flag"
	"fmt"
	"net"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/snapshot"
)

// SnapshotConfig configures the snapshots of the index state that let a
// restarted cell skip rebuilding its index from the engines (package
// cell/snapshot).
type SnapshotConfig struct {
	// Dir is the directory snapshots are written to and loaded from; ""
	// turns snapshots off. It belongs to this replica alone: the cell
	// locks it (flock) from New to the end of Run, and a second process
	// given it refuses to start, naming the holder.
	Dir string `yaml:"dir"`
	// Interval is how often a snapshot is written; 0 writes only on
	// graceful shutdown (and every_events). Default 5m.
	Interval time.Duration `yaml:"interval"`
	// EveryEvents writes a snapshot when this many event batches were
	// applied since the last one (checked every second); 0 turns it off.
	EveryEvents uint64 `yaml:"every_events"`
	// Keep is how many snapshot files are kept, newest first; older ones
	// are deleted after each write. Default 3 (a corrupt newest file then
	// falls back to the one before).
	Keep int `yaml:"keep"`
	// MaxBytes bounds the size of a snapshot the cell loads, from a file
	// or a peer. Default 8 GiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// BootstrapFrom is the gRPC address (host:port) of a live replica of
	// this cell to fetch a snapshot from at start when no local snapshot
	// is valid (CellService.StreamSnapshot); "" turns it off.
	BootstrapFrom string `yaml:"bootstrap_from"`
	// BootstrapKeyFile is a file holding an API key with the admin scope,
	// presented to the replica when it requires keys; with tls set the
	// cell's own certificate is presented too.
	BootstrapKeyFile string `yaml:"bootstrap_key_file"`
	// BootstrapTimeout bounds the whole bootstrap call. Default 2m.
	BootstrapTimeout time.Duration `yaml:"bootstrap_timeout"`
}

// defaultSnapshot is the section's default: off, with the intervals and
// bounds it would use.
func defaultSnapshot() SnapshotConfig {
	return SnapshotConfig{Interval: 5 * time.Minute, Keep: 3, MaxBytes: 8 << 30, BootstrapTimeout: 2 * time.Minute}
}

// validate reports the first bad field of the snapshot section.
func (s SnapshotConfig) validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: snapshot.%s = %v: %s", ErrConfig, field, v, why)
	}
	switch {
	case s.Interval < 0:
		return bad("interval", s.Interval, "must not be negative")
	case s.Keep < 1:
		return bad("keep", s.Keep, "must be at least 1")
	case s.MaxBytes < 1024:
		return bad("max_bytes", s.MaxBytes, "must be at least 1024")
	case s.BootstrapTimeout <= 0:
		return bad("bootstrap_timeout", s.BootstrapTimeout, "must be positive")
	}
	if s.BootstrapFrom != "" {
		if _, _, err := net.SplitHostPort(s.BootstrapFrom); err != nil {
			return bad("bootstrap_from", fmt.Sprintf("%q", s.BootstrapFrom), "want host:port")
		}
	}
	return nil
}

// snapshotIdentity is what a snapshot must share with this cell.
func (c Config) snapshotIdentity() (snapshot.Identity, error) {
	fp, err := snapshot.Fingerprint(c.Events.BlockSize)
	if err != nil {
		return snapshot.Identity{}, err
	}
	layout, err := index.ParseLayout(c.Index.Layout)
	if err != nil {
		return snapshot.Identity{}, err
	}
	return snapshot.Identity{CellID: c.CellID, Model: c.Events.DefaultModel, BlockSize: c.Events.BlockSize, HashFingerprint: fp, Layout: layout}, nil
}

// BindSnapshotFlags registers the snapshot section's flags on fs and
// returns a function that copies the flags set on the command line into a
// SnapshotConfig (a configuration file's values stand otherwise). Call it
// after fs.Parse.
func BindSnapshotFlags(fs *flag.FlagSet) func(*SnapshotConfig) {
	d := defaultSnapshot()
	v := d
	fs.StringVar(&v.Dir, "snapshot-dir", "", "override snapshot.dir: where index snapshots are written and loaded from (empty: off)")
	fs.DurationVar(&v.Interval, "snapshot-interval", d.Interval, "override snapshot.interval: how often a snapshot is written (0: on shutdown only)")
	fs.Uint64Var(&v.EveryEvents, "snapshot-every-events", 0, "override snapshot.every_events: also write after this many event batches (0: off)")
	fs.IntVar(&v.Keep, "snapshot-keep", d.Keep, "override snapshot.keep: snapshot files kept")
	fs.StringVar(&v.BootstrapFrom, "bootstrap-from", "", "override snapshot.bootstrap_from: gRPC address of a live replica to fetch the index from when no local snapshot is valid")
	return func(dst *SnapshotConfig) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "snapshot-dir":
				dst.Dir = v.Dir
			case "snapshot-interval":
				dst.Interval = v.Interval
			case "snapshot-every-events":
				dst.EveryEvents = v.EveryEvents
			case "snapshot-keep":
				dst.Keep = v.Keep
			case "bootstrap-from":
				dst.BootstrapFrom = v.BootstrapFrom
			}
		})
	}
}
