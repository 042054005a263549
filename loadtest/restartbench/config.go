package restartbench

import (
	"fmt"
	"os/exec"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/snapshot"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Config configures the restart benchmark.
type Config struct {
	// TracePath is the Mooncake trace; MaxRequests uses its first N
	// requests (0: all).
	TracePath   string
	MaxRequests int
	// Pods, BlocksPerPod, BlockSize, Model and Seed shape the fleet whose
	// events the trace becomes (package eventgen); the router's block size
	// is BlockSize too. The defaults, 256 pods of 16,384 blocks, end the
	// whole trace with about 3M blocks indexed.
	Pods, BlocksPerPod, BlockSize int
	Model                         string
	Seed                          uint64
	// Runs is how many times each way is measured (and the snapshot
	// written); the report gives medians.
	Runs int
	// Dir holds the snapshot and the event log ("" : a temporary
	// directory, removed at the end).
	Dir string
	// ChildTimeout bounds one child process.
	ChildTimeout time.Duration
	// Child returns the command of a child process that runs RunChild with
	// this configuration in mode on path and prints its ChildResult as
	// JSON. Run kills it if ChildTimeout passes or Run's context ends.
	Child func(mode, path string) *exec.Cmd
	// Progress, when not nil, receives progress lines.
	Progress func(format string, args ...any)
}

// DefaultConfig is the full trace on 256 pods of 16,384 blocks, 3 runs.
func DefaultConfig() Config {
	return Config{TracePath: trace.DefaultPath, Pods: 256, BlocksPerPod: 16384, BlockSize: 16, Model: "mooncake", Seed: 42,
		Runs: 3, ChildTimeout: 10 * time.Minute}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Pods < 1 || c.Pods > 256:
		return fmt.Errorf("restartbench: Pods = %d, want 1..256", c.Pods)
	case c.BlocksPerPod < 1:
		return fmt.Errorf("restartbench: BlocksPerPod = %d, want >= 1", c.BlocksPerPod)
	case c.BlockSize < 1 || trace.TokensPerID%c.BlockSize != 0:
		return fmt.Errorf("restartbench: BlockSize = %d, want a divisor of %d", c.BlockSize, trace.TokensPerID)
	case c.Runs < 1 || c.Runs > 100:
		return fmt.Errorf("restartbench: Runs = %d, want 1..100", c.Runs)
	case c.MaxRequests < 0:
		return fmt.Errorf("restartbench: MaxRequests = %d, want >= 0", c.MaxRequests)
	case c.ChildTimeout <= 0:
		return fmt.Errorf("restartbench: ChildTimeout = %v, want > 0", c.ChildTimeout)
	}
	return nil
}

// eventsConfig is the applier's configuration, as celld's with the
// fleet's model as its default.
func (c Config) eventsConfig() events.Config {
	ec := events.DefaultConfig()
	ec.BlockSize = c.BlockSize
	ec.DefaultModel = c.Model
	ec.MaxBlocksPerPod = max(ec.MaxBlocksPerPod, 2*c.BlocksPerPod)
	ec.MaxIndexBlocksPerPod = max(ec.MaxIndexBlocksPerPod, 2*c.BlocksPerPod)
	return ec
}

// identity is the snapshots' identity: one cell, "bench".
func (c Config) identity() (snapshot.Identity, error) {
	fp, err := snapshot.Fingerprint(c.BlockSize)
	if err != nil {
		return snapshot.Identity{}, err
	}
	return snapshot.Identity{CellID: "bench", Model: c.Model, BlockSize: c.BlockSize, HashFingerprint: fp}, nil
}

func (c Config) progress(format string, args ...any) {
	if c.Progress != nil {
		c.Progress(format, args...)
	}
}
