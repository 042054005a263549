package snapshot

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// File names: snapshot-<created unix ns, 20 digits>@<owner>.snap, so that
// names sort by age and say which cell replica wrote them (Owner); files
// of earlier versions have no "@<owner>". Temporary files are
// .snapshot@<owner>@<random>.tmp. A writer prunes only its own files (and
// those without an owner), so two replicas that somehow share a folder
// never delete each other's files; the folder lock (LockDir) refuses the
// second replica in the first place.
const (
	filePrefix = "snapshot-"
	fileSuffix = ".snap"
	ownerSep   = "@"
	tmpPrefix  = ".snapshot" + ownerSep
	tmpSuffix  = ".tmp"
	legacyTmp  = ".snapshot-*.tmp" // temporary files of earlier versions
)

// Owner returns the tag naming the files of a cell's replica: the cell
// id and the replica id joined by "+", each with every byte outside
// [A-Za-z0-9-] written as %XX, so that distinct replicas never share a
// tag nor one tag prefix another's files.
func Owner(cell, replica string) string { return escapeOwner(cell) + "+" + escapeOwner(replica) }

func escapeOwner(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// FileName returns the name of a snapshot owner created at t ("" owner:
// the name earlier versions gave).
func FileName(t time.Time, owner string) string {
	if owner == "" {
		return fmt.Sprintf("%s%020d%s", filePrefix, t.UnixNano(), fileSuffix)
	}
	return fmt.Sprintf("%s%020d%s%s%s", filePrefix, t.UnixNano(), ownerSep, owner, fileSuffix)
}

// fileOwner returns the owner in a snapshot file's name ("" for a file
// of an earlier version) and whether the name is a snapshot's.
func fileOwner(name string) (string, bool) {
	if !strings.HasPrefix(name, filePrefix) || !strings.HasSuffix(name, fileSuffix) {
		return "", false
	}
	rest := strings.TrimSuffix(strings.TrimPrefix(name, filePrefix), fileSuffix)
	stamp, owner, found := strings.Cut(rest, ownerSep)
	if len(stamp) != 20 || strings.Trim(stamp, "0123456789") != "" || (found && owner == "") {
		return "", false
	}
	return owner, true
}

// List returns every snapshot file in dir, whoever wrote it, newest first.
// A missing dir has none.
func List(dir string) ([]string, error) { return list(dir, func(string) bool { return true }) }

// list returns the snapshot files in dir whose owner keep accepts, newest
// first (the fixed-width time stamp leads every name).
func list(dir string, keep func(owner string) bool) ([]string, error) {
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
		if owner, ok := fileOwner(n); ok && e.Type().IsRegular() && keep(owner) {
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(out)))
	return out, nil
}

// WriteFile writes a snapshot of src into dir atomically: into a temporary
// file in dir, synced, renamed to its final name (FileName(now, owner)),
// and the directory synced, so that a crash leaves either the whole new
// file or none. It then prunes the owner's files (Prune). It returns the
// file's path.
func WriteFile(dir, owner string, keep int, id Identity, src Source, now time.Time) (string, WriteStats, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", WriteStats{}, errWrap("write", err)
	}
	tmp, err := os.CreateTemp(dir, tmpPrefix+owner+ownerSep+"*"+tmpSuffix)
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
	path := filepath.Join(dir, FileName(now, owner))
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", st, errWrap("rename", err)
	}
	done = true
	if err := syncDir(dir); err != nil {
		return path, st, err
	}
	return path, st, Prune(dir, owner, keep)
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

// Prune deletes all but the keep newest of the owner's snapshots in dir
// (files of earlier versions, which name no owner, count as its own), and
// the temporary files the owner's crashes and earlier versions' left
// behind. Other owners' files are never touched.
func Prune(dir, owner string, keep int) error {
	files, err := list(dir, func(o string) bool { return o == owner || o == "" })
	if err != nil {
		return err
	}
	for i := keep; i < len(files); i++ {
		if err := os.Remove(files[i]); err != nil && !os.IsNotExist(err) {
			return errWrap("prune", err)
		}
	}
	own, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+owner+ownerSep+"*"+tmpSuffix))
	legacy, _ := filepath.Glob(filepath.Join(dir, legacyTmp))
	for _, t := range append(own, legacy...) {
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
// whichever replica wrote it (a replica whose id changed, such as a
// Kubernetes pod name, still finds its predecessor's), trying older ones
// when a newer one is refused. It returns the snapshot
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
