package reload

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWatcher(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(a, "one")
	write(b, "x")
	var loaded []string
	var errs []error
	load := func(data [][]byte) error {
		if strings.HasPrefix(string(data[0]), "bad") {
			return errors.New("bad contents")
		}
		loaded = append(loaded, string(data[0])+"|"+string(data[1]))
		return nil
	}
	w, err := New([]string{a, b}, time.Hour, load, func(err error) { errs = append(errs, err) })
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		change     func()
		wantLoaded bool
		wantErrs   int
	}{
		{"unchanged", func() {}, false, 0},
		{"first file", func() { write(a, "two") }, true, 0},
		{"second file", func() { write(b, "y") }, true, 0},
		{"same bytes rewritten", func() { write(b, "y") }, false, 0},
		{"renamed over", func() { write(a+".new", "three"); os.Rename(a+".new", a) }, true, 0},
		{"refused contents", func() { write(a, "bad1") }, false, 1},
		{"refused again: reported once", func() {}, false, 1},
		{"fixed", func() { write(a, "four") }, true, 1},
		{"file gone", func() { os.Remove(b) }, false, 2},
	}
	for _, s := range steps {
		s.change()
		got, _ := w.Check()
		if got != s.wantLoaded || len(errs) != s.wantErrs {
			t.Fatalf("%s: loaded %v with %d errors (%v), want %v with %d", s.name, got, len(errs), errs, s.wantLoaded, s.wantErrs)
		}
	}
	want := "one|x,two|x,two|y,three|y,four|y"
	if got := strings.Join(loaded, ","); got != want {
		t.Errorf("loads: got %s, want %s", got, want)
	}
}

func TestNewRefusesBadFiles(t *testing.T) {
	dir := t.TempDir()
	if _, err := New([]string{filepath.Join(dir, "missing")}, 0, func([][]byte) error { return nil }, nil); err == nil {
		t.Error("a missing file: got nil, want an error")
	}
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("x"), 0o600)
	want := errors.New("refused")
	if _, err := New([]string{p}, 0, func([][]byte) error { return want }, nil); !errors.Is(err, want) {
		t.Errorf("a refused file: got %v, want %v", err, want)
	}
	if _, err := New(nil, 0, nil, nil); err == nil {
		t.Error("no files: got nil, want an error")
	}
}

// TestRun checks that Run picks a change up by itself and stops with its
// context.
func TestRun(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("1"), 0o600)
	var mu sync.Mutex
	last := ""
	w, err := New([]string{p}, 5*time.Millisecond, func(d [][]byte) error {
		mu.Lock()
		defer mu.Unlock()
		last = string(d[0])
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Run(ctx); close(done) }()
	os.WriteFile(p, []byte("2"), 0o600)
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		got := last
		mu.Unlock()
		if got == "2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the change was not loaded: last %q", got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	<-done
}

// TestRunWaitsForSettledFiles checks that Run does not apply contents that
// changed since its last poll (a file halfway through a rewrite), only
// contents two polls in a row agree on.
func TestRunWaitsForSettledFiles(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("1"), 0o600)
	var loads []string
	w, err := New([]string{p}, time.Hour, func(d [][]byte) error { loads = append(loads, string(d[0])); return nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		write      string // "" writes nothing
		wantLoaded bool
	}{
		{"", false},
		{"2-half", false}, // first seen
		{"2", false},      // changed again: still settling
		{"", true},        // the same twice: applied
		{"", false},
	}
	for i, s := range steps {
		if s.write != "" {
			os.WriteFile(p, []byte(s.write), 0o600)
		}
		if got, _ := w.check(true); got != s.wantLoaded {
			t.Fatalf("poll %d: loaded %v, want %v", i, got, s.wantLoaded)
		}
	}
	if strings.Join(loads, ",") != "1,2" {
		t.Errorf("loads: got %v, want [1 2] (never the half-written file)", loads)
	}
}
