package trace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocate checks where Locate finds a relative trace path: as given,
// above the first start directory, above the second, or nowhere.
func TestLocate(t *testing.T) {
	repo := t.TempDir()                            // a checkout: repo/loadtest/traces/x.jsonl
	deep := filepath.Join(repo, "cmd", "loadtest") // somewhere inside it
	elsewhere := t.TempDir()                       // outside any checkout
	bin := filepath.Join(repo, "bin")              // a binary built into the checkout
	for _, d := range []string{filepath.Join(repo, "loadtest", "traces"), deep, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rel := filepath.Join("loadtest", "traces", "x.jsonl")
	want := filepath.Join(repo, rel)
	if err := os.WriteFile(want, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		starts  []string
		want    string
		wantErr bool
	}{
		{"existing path as given", want, nil, want, false},
		{"from the root", rel, []string{repo}, want, false},
		{"from a subdirectory", rel, []string{deep}, want, false},
		{"beside the executable", rel, []string{elsewhere, bin}, want, false},
		{"nowhere", rel, []string{elsewhere}, "", true},
		{"missing absolute path", filepath.Join(elsewhere, "x.jsonl"), []string{repo}, "", true},
		{"a directory is not a trace", filepath.Join("loadtest", "traces"), []string{repo}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := locateFrom(tt.path, tt.starts)
			if tt.wantErr {
				if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), filepath.Base(tt.path)) {
					t.Errorf("got %q, %v; want ErrNotFound naming %s", got, err, tt.path)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

// TestLocateFindsTheRepositoryTrace checks the default path from this
// package's directory (where go test runs), two levels below the root.
func TestLocateFindsTheRepositoryTrace(t *testing.T) {
	got, err := Locate(DefaultPath)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := filepath.Abs(filepath.Join("..", "..", DefaultPath)); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
