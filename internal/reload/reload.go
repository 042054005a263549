package reload

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"time"
)

// DefaultInterval is how often a Watcher reads its files unless told.
const DefaultInterval = 2 * time.Second

// Watcher reloads a set of files. New loads them once; Run loads them again
// whenever their contents change, until its context ends.
type Watcher struct {
	paths    []string
	interval time.Duration
	load     func(data [][]byte) error
	onError  func(error)

	applied [sha256.Size]byte // contents last loaded successfully
	failed  [sha256.Size]byte // contents last refused, reported once
	seen    [sha256.Size]byte // contents of the last poll (Run)
}

// New reads the files at paths and calls load with their contents, in the
// order of paths, returning its error: a daemon refuses to start on a bad
// file. Later changes are loaded by Run every interval (DefaultInterval
// when 0); a change that load refuses is reported to onError once, and the
// previous contents stay in force. load and onError are called from one
// goroutine at a time.
func New(paths []string, interval time.Duration, load func(data [][]byte) error, onError func(error)) (*Watcher, error) {
	if len(paths) == 0 {
		return nil, errors.New("reload: no files")
	}
	if interval <= 0 {
		interval = DefaultInterval
	}
	if onError == nil {
		onError = func(error) {}
	}
	w := &Watcher{paths: paths, interval: interval, load: load, onError: onError}
	data, sum, err := w.read()
	if err != nil {
		return nil, err
	}
	if err := load(data); err != nil {
		return nil, err
	}
	w.applied, w.seen = sum, sum
	return w, nil
}

// read returns the files' contents and a digest of them all.
func (w *Watcher) read() ([][]byte, [sha256.Size]byte, error) {
	h := sha256.New()
	out := make([][]byte, len(w.paths))
	for i, p := range w.paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, [sha256.Size]byte{}, fmt.Errorf("reload: %w", err)
		}
		out[i] = b
		fmt.Fprintf(h, "%d:", len(b))
		h.Write(b)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return out, sum, nil
}

// Check reads the files once and loads them if they changed. It reports
// whether new contents were loaded; a read or load error goes to onError
// (once per distinct contents) and is returned.
func (w *Watcher) Check() (bool, error) { return w.check(false) }

// check is Check; settled loads new contents only once two reads in a row
// saw them, so that a file caught halfway through a rewrite (empty, or
// cut short, which may still parse) is never applied.
func (w *Watcher) check(settled bool) (bool, error) {
	data, sum, err := w.read()
	if err != nil {
		w.onError(err)
		return false, err
	}
	last := w.seen
	w.seen = sum
	if sum == w.applied || (settled && sum != last) {
		return false, nil
	}
	if err := w.load(data); err != nil {
		if sum != w.failed {
			w.failed = sum
			w.onError(err)
		}
		return false, err
	}
	w.applied = sum
	return true, nil
}

// Run reads the files every interval until ctx ends, and loads new
// contents once they have stayed the same for one interval (a file being
// rewritten is not applied half-written).
func (w *Watcher) Run(ctx context.Context) {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = w.check(true)
		}
	}
}

// Paths returns the watched files.
func (w *Watcher) Paths() []string { return w.paths }
