package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestDispatchErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no command", nil, "usage"},
		{"unknown command", []string{"nope"}, `unknown command "nope"`},
		{"bad flag", []string{"index", "--no-such-flag"}, "flag provided but not defined"},
		{"bad workers", []string{"index", "--workers", "0"}, "Workers must be in [1, 256], got 0"},
		{"bad block size", []string{"index", "--block-size", "24"}, "BlockSize must divide 512, got 24"},
		{"bad window", []string{"index", "--window", "0s"}, "Window must be >= 1ms"},
		{"bad layout", []string{"index", "--layout", "pages"}, `Layout must be "block", "paged" or "both", got "pages"`},
		{"stray argument", []string{"index", "extra"}, `unexpected argument "extra"`},
		{"missing trace", []string{"index", "--trace", "does-not-exist.jsonl", "--quiet"}, "does-not-exist.jsonl"},
		{"missing tokenizer", []string{"enginesim", "--tokenizer-json", "no-such-tokenizer.json"}, "no-such-tokenizer.json"},
		{"unknown chat template", []string{"enginesim", "--tokenizer-json", "demo", "--chat-template", "jinja"}, `unknown chat template "jinja"`},
		{"bad overhead prompt", []string{"overhead", "--prompt", "image"}, `Prompt = "image"`},
		{"overhead tls without global", []string{"overhead", "--tls", "--global=false"}, "needs Global"},
		{"bad hierarchy prompt", []string{"hierarchy", "--prompt", "image", "--quiet"}, `Prompt must be tokens, text or chat, got "image"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := dispatch(context.Background(), tt.args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("dispatch(%q) got error %v, want one containing %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

func TestHelpListsCommands(t *testing.T) {
	var out bytes.Buffer
	if err := dispatch(context.Background(), []string{"help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for name := range commands {
		if !strings.Contains(out.String(), name) {
			t.Errorf("help got %q, want it to list %q", out.String(), name)
		}
	}
}

func TestIndexJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"index", "--trace", "../../testdata/mooncake_small.jsonl", "--max-requests", "120",
		"--json", "--window", "40ms", "--steps", "10", "--steps-per-decade", "3", "--blocks-per-worker", "512"}
	if err := dispatch(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("dispatch: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	for _, k := range []string{"workers", "events", "queries", "threshold_block_ops_per_s", "query_p50_ns", "query_p99_ns",
		"bytes_per_block", "baseline", "speedup", "block_size", "blocks_per_worker", "go_max_procs", "valid"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
	if got := rep["requests"]; got != float64(120) {
		t.Errorf("got requests %v, want 120", got)
	}
	if got := rep["blocks_per_worker"]; got != float64(512) {
		t.Errorf("got blocks_per_worker %v, want 512", got)
	}
	if !strings.Contains(errOut.String(), "pilot") {
		t.Errorf("stderr got %q, want progress lines", errOut.String())
	}
}

// TestHierarchyAgentsNeedsNoTrace: the agents and cold workloads are
// generated, so they run without the trace file the conversation workload
// reads.
func TestHierarchyAgentsNeedsNoTrace(t *testing.T) {
	for _, w := range []string{"agents", "cold"} {
		t.Run(w, func(t *testing.T) { hierarchyNeedsNoTrace(t, w) })
	}
}

func hierarchyNeedsNoTrace(t *testing.T, workload string) {
	var out, errOut bytes.Buffer
	args := []string{"hierarchy", "--workload", workload, "--trace", "does-not-exist.jsonl", "--max-requests", "150",
		"--cells", "2", "--pods-per-cell", "4", "--seeds", "1", "--loads", "20", "--json", "--quiet"}
	if err := dispatch(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("dispatch: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep struct {
		Workload string `json:"workload"`
		Requests int    `json:"requests"`
		Seeds    []int  `json:"seeds"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Workload != workload || rep.Requests != 150 || len(rep.Seeds) != 1 {
		t.Fatalf("report %+v, want %s, 150 requests, one seed", rep, workload)
	}
}
