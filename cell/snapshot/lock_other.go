//go:build !unix

package snapshot

import (
	"errors"
	"fmt"
)

// ErrLocked is returned by LockDir for a folder another process holds.
var ErrLocked = errors.New("snapshot: folder held by another process")

// LockFile is the name of the lock file in a snapshot folder.
const LockFile = ".snapshot.lock"

// Holder says who holds a snapshot folder.
type Holder struct {
	Cell, Replica string
}

// DirLock is a held snapshot folder.
type DirLock struct{ dir string }

// LockDir refuses: folder locks use flock, which only unix systems have,
// and a snapshot folder that is not locked may be shared unnoticed.
func LockDir(dir string, _ Holder) (*DirLock, error) {
	return nil, fmt.Errorf("snapshot: lock %s: folder locking needs a unix system (flock)", dir)
}

// Dir returns the locked folder.
func (l *DirLock) Dir() string { return l.dir }

// Unlock is a no-op.
func (l *DirLock) Unlock() error { return nil }
