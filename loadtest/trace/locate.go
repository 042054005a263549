package trace

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultPath is where the repository keeps its Mooncake trace, relative to
// the repository root.
const DefaultPath = "loadtest/traces/conversation_trace.jsonl"

// ErrNotFound means Locate found no file at a path nor in the places it
// searches.
var ErrNotFound = errors.New("trace: file not found")

// Locate returns where the trace file path is. A path that names a file is
// returned as it is. A relative one that does not (the default path, run
// from outside the repository root) is looked for under the working
// directory's parents, then under the directory of the running executable
// and its parents, so that the repository's copy is found from anywhere
// inside a checkout or by a binary built into one. Otherwise the error
// wraps ErrNotFound and says where Locate looked.
func Locate(path string) (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	return locateFrom(path, starts)
}

// locateFrom is Locate with the directories to search up from.
func locateFrom(path string, starts []string) (string, error) {
	if isFile(path) {
		return path, nil
	}
	if path == "" || filepath.IsAbs(path) {
		return "", fmt.Errorf("%w: %q", ErrNotFound, path)
	}
	for _, start := range starts {
		for dir := start; ; {
			if p := filepath.Join(dir, path); isFile(p) {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("%w: %s, in %s or any parent directory", ErrNotFound, path, strings.Join(starts, " or "))
}

// isFile reports whether path names a regular file (or a link to one).
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
