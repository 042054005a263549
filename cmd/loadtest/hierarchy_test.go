package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
)

// TestHierarchyScaleFlags runs "loadtest hierarchy --scale" on a tiny fleet
// and checks that the scale flags reach the run and the JSON carries the
// issue's fields.
func TestHierarchyScaleFlags(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"hierarchy", "--scale", "--trace", "../../testdata/mooncake_small.jsonl", "--cells", "4", "--pods-per-cell", "2",
		"--blocks-per-pod", "64", "--tenants", "2", "--seconds", "60", "--warmup", "20", "--fpr", "0.02",
		"--move-weight", "2.5", "--probe-cold=false", "--json", "--quiet"}
	if err := dispatch(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("dispatch: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	want := map[string]any{"cells": 4.0, "pods_per_cell": 2.0, "blocks_per_pod": 64.0, "tenants": 2.0, "warmup_seconds": 20.0, "fpr": 0.02,
		"move_weight": 2.5, "probe_cold": false}
	for k, v := range want {
		if rep[k] != v {
			t.Errorf("%s: got %v, want %v", k, rep[k], v)
		}
	}
	for _, k := range []string{"reuse_loss", "probes_p95", "summary_bytes_per_cell", "gossip_bytes_per_s", "decision_p50_us", "decision_p99_us",
		"global_heap_bytes", "reuse_oracle", "reuse_hier", "deep_share_oracle"} {
		if _, ok := rep[k].(float64); !ok {
			t.Errorf("JSON field %q: got %v, want a number", k, rep[k])
		}
	}
	if s, _ := rep["trace_seconds"].(float64); s < 35 || s > 40 {
		t.Errorf("trace_seconds %v, want about 40 (60 replayed, 20 of warm-up)", s)
	}
}

// TestHierarchyPressureFlag: --pressure-weight reaches the quality run (its
// cells' kv-cost and the global choice) and its JSON, as --avoid-busy does
// (the global choice).
func TestHierarchyPressureFlag(t *testing.T) {
	var out, errOut bytes.Buffer
	args := []string{"hierarchy", "--trace", "../../testdata/mooncake_small.jsonl", "--cells", "2", "--pods-per-cell", "2",
		"--blocks-per-pod", "256", "--seeds", "1", "--decode-ms-per-token", "20", "--pressure-weight", "0.5", "--avoid-busy", "--json", "--quiet"}
	if err := dispatch(context.Background(), args, &out, &errOut); err != nil {
		t.Fatalf("dispatch: %v\nstderr:\n%s", err, errOut.String())
	}
	var rep map[string]any
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, out.String())
	}
	if rep["pressure_weight"] != 0.5 {
		t.Fatalf("pressure_weight: got %v, want 0.5", rep["pressure_weight"])
	}
	if rep["avoid_busy"] != true {
		t.Fatalf("avoid_busy: got %v, want true", rep["avoid_busy"])
	}
	if _, ok := rep["reuse_loss"].(float64); !ok {
		t.Fatalf("reuse_loss: got %v, want a number", rep["reuse_loss"])
	}
}
