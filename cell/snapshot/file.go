package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// File names: snapshot-<created unix ns, 20 digits>.snap, so that names sort
// by age; temporary files start with a dot and end in .tmp.
const (
	filePrefix = "snapshot-"
	fileSuffix = ".snap"
)

// FileName returns the name of a snapshot created at t.
func FileName(t time.Time) string {
	return fmt.Sprintf("%s%020d%s", filePrefix, t.UnixNano(), fileSuffix)
}

// List returns the snapshot files in dir, newest first. A missing dir has
// none.
func List(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, errWrap("list", err)
	}
	var out []string
	for _, e := range ents {
		n := e.Name()
		if e.Type().IsRegular() && strings.HasPrefix(n, filePrefix) && strings.HasSuffix(n, fileSuffix) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out, nil
}

// WriteFile writes a snapshot of src into dir atomically: into a temporary
// file in dir, synced, renamed to its final name (FileName(now)), and the
// directory synced, so that a crash leaves either the whole new file or
// none. It then deletes all but the keep newest snapshots. It returns the
// file's path.
func WriteFile(dir string, keep int, id Identity, src Source, now time.Time) (string, WriteStats, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", WriteStats{}, errWrap("write", err)
	}
	tmp, err := os.CreateTemp(dir, ".snapshot-*.tmp")
	if err != nil {
		return "", WriteStats{}, errWrap("write", err)
	}
	done := false
	defer func() {
		if !done {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	st, err := Write(tmp, id, src, now)
	if err != nil {
		return "", st, errWrap("write", err)
	}
	if err := tmp.Sync(); err != nil {
		return "", st, errWrap("sync", err)
	}
	if err := tmp.Close(); err != nil {
		return "", st, errWrap("close", err)
	}
	path := filepath.Join(dir, FileName(now))
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", st, errWrap("rename", err)
	}
	done = true
	if err := syncDir(dir); err != nil {
		return path, st, err
	}
	return path, st, Prune(dir, keep)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return errWrap("sync dir", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return errWrap("sync dir", err)
	}
	return nil
}

// Prune deletes all but the keep newest snapshots in dir, and temporary
// files a crash left behind.
func Prune(dir string, keep int) error {
	files, err := List(dir)
	if err != nil {
		return err
	}
	for i := keep; i < len(files); i++ {
		if err := os.Remove(files[i]); err != nil && !os.IsNotExist(err) {
			return errWrap("prune", err)
		}
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, ".snapshot-*.tmp"))
	for _, t := range tmps {
		os.Remove(t)
	}
	return nil
}

// Refusal is a snapshot file that was not loaded, and why.
type Refusal struct {
	Path string
	Err  error
}

// LoadNewest decodes the newest snapshot in dir that is valid for want,
// trying older ones when a newer one is refused. It returns the snapshot
// and its path, the files refused on the way (for the log), and ErrNone
// when no file could be loaded. maxBytes bounds the size of a file it
// reads (0: no bound).
func LoadNewest(dir string, want Identity, maxBytes int64) (*Snapshot, string, []Refusal, error) {
	files, err := List(dir)
	if err != nil {
		return nil, "", nil, err
	}
	var refused []Refusal
	for _, f := range files {
		s, err := LoadFile(f, want, maxBytes)
		if err != nil {
			refused = append(refused, Refusal{Path: f, Err: err})
			continue
		}
		return s, f, refused, nil
	}
	return nil, "", refused, ErrNone
}

// LoadFile reads and decodes one snapshot file.
func LoadFile(path string, want Identity, maxBytes int64) (*Snapshot, error) {
	if maxBytes > 0 {
		fi, err := os.Stat(path)
		if err != nil {
			return nil, errWrap("load", err)
		}
		if fi.Size() > maxBytes {
			return nil, refuse(ErrCorrupt, "%d bytes is more than the %d allowed", fi.Size(), maxBytes)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, errWrap("load", err)
	}
	return Decode(data, want)
}
