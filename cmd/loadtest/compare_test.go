package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cellrouter/cellrouter/loadtest/compare"
)

// TestParseRates checks --rate: positive multipliers, comma-separated,
// anything else refused with the flag's value named.
func TestParseRates(t *testing.T) {
	got, err := parseRates("1, 2,4.5")
	if err != nil || !slices.Equal(got, []float64{1, 2, 4.5}) {
		t.Fatalf("parseRates(\"1, 2,4.5\") = %v, %v; want [1 2 4.5]", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "1,,2", "fast"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) accepted, want an error", bad)
		}
	}
}

// TestCheckRepeat checks --repeat: at least 1, and above 1 only with the
// --rate sweep it repeats.
func TestCheckRepeat(t *testing.T) {
	for _, tt := range []struct {
		repeat int
		rates  string
		ok     bool
	}{{1, "", true}, {1, "1,2", true}, {3, "1.5", true}, {3, "", false}, {0, "1", false}, {-2, "1", false}} {
		if err := checkRepeat(tt.repeat, tt.rates); (err == nil) != tt.ok {
			t.Errorf("checkRepeat(%d, %q) = %v, want ok %v", tt.repeat, tt.rates, err, tt.ok)
		}
	}
}

// TestWriteSweepKeepsEveryRun checks that -out writes every run of a
// repeated sweep: the first under rate-xR, the others under rate-xR/run-N.
func TestWriteSweepKeepsEveryRun(t *testing.T) {
	rep := func() *compare.Report {
		return &compare.Report{Modes: map[string]*compare.ModeResult{compare.ModeKV: {}}}
	}
	sw := &compare.Sweep{Repeat: 3, Points: []compare.SweepPoint{{Rate: 1.5, Report: rep(), Repeats: []*compare.Report{rep(), rep()}}}}
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	if err := writeSweep(sw, dir, true, true, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"report.json", "rate-x1.5/index.html", "rate-x1.5/run-2/index.html", "rate-x1.5/run-3/index.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("writeSweep did not write %s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "rate-x1.5", "run-4")); err == nil {
		t.Error("writeSweep wrote a run-4 of a sweep repeated 3 times")
	}
	var back compare.Sweep
	if err := json.Unmarshal(stdout.Bytes(), &back); err != nil || len(back.Points) != 1 || len(back.Points[0].Repeats) != 2 {
		t.Errorf("stdout %q (%v), want the sweep's JSON with its two repeats", stdout.String(), err)
	}
}
