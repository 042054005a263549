//go:build unix

package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrLocked is returned by LockDir for a folder another process holds.
var ErrLocked = errors.New("snapshot: folder held by another process")

// LockFile is the name of the lock file in a snapshot folder.
const LockFile = ".snapshot.lock"

// Holder says who holds a snapshot folder; LockDir writes it into the
// lock file, and a refused process names it in its error.
type Holder struct {
	Cell, Replica string
}

// DirLock is a held snapshot folder: an exclusive flock on its lock file,
// which the kernel releases when the process dies, however it dies.
type DirLock struct {
	dir string
	f   *os.File
}

// LockDir creates dir if needed and takes its lock for the life of the
// process (until Unlock), so that two cells never write, prune or load
// each other's snapshots. A folder another process holds is refused at
// once with ErrLocked, naming the folder and the holder (its pid, cell,
// replica and since when, as its lock file says).
func LockDir(dir string, h Holder) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, errWrap("lock", err)
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, errWrap("lock", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by %s; every cell replica needs a snapshot.dir of its own",
				ErrLocked, dir, describeHolder(f))
		}
		return nil, errWrap("lock "+path, err)
	}
	host, _ := os.Hostname()
	info := fmt.Sprintf("pid=%d\ncell=%s\nreplica=%s\nhost=%s\nsince=%s\n",
		os.Getpid(), h.Cell, h.Replica, host, time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, err = f.WriteAt([]byte(info), 0)
	}
	if err != nil {
		f.Close()
		return nil, errWrap("lock "+path, err)
	}
	return &DirLock{dir: dir, f: f}, nil
}

// describeHolder reads who holds the lock from its file.
func describeHolder(f *os.File) string {
	buf := make([]byte, maxHolderBytes)
	n, _ := f.ReadAt(buf, 0)
	return parseHolder(buf[:n])
}

// Dir returns the locked folder.
func (l *DirLock) Dir() string { return l.dir }

// Unlock releases the folder. The lock file stays (removing it would let
// a third process lock a new file while a second still holds the old one).
// Calling it again is a no-op.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the last descriptor releases the flock
	l.f = nil
	if err != nil {
		return errWrap("unlock", err)
	}
	return nil
}
