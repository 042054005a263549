package ingestbench

import (
	"bytes"
	"context"
	"math/bits"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// tinyConfig is a configuration that runs in a few seconds even under the
// race detector: the test slice's first requests over 4 small engines, so
// that evictions happen.
func tinyConfig() Config {
	cfg := DefaultConfig()
	cfg.TracePath = testTrace
	cfg.MaxRequests = 120
	cfg.Pods = 4
	cfg.BlocksPerPod = 1024
	cfg.StepTokens = 2048
	cfg.Timeout = 2 * time.Minute
	return cfg
}

func TestRunTiny(t *testing.T) {
	cfg := tinyConfig()
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		t.Fatal(err)
	}
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Valid {
		t.Fatalf("got an invalid run: main %v, paced %v", rep.Main.Problems, rep.Paced.Problems)
	}
	if rep.Paced == nil {
		t.Fatal("got no paced phase, want one at PacedFraction of the saturation rate")
	}
	if got, want := rep.Paced.OfferedRate, cfg.PacedFraction*rep.Main.BlockEventsPerS; got != want {
		t.Errorf("paced offered rate: got %v, want %v", got, want)
	}
	if rep.Workload.RemovedBlocks == 0 {
		t.Errorf("got no evictions; the tiny config should fill its engines")
	}
	if rep.Workload.Batches != w.Batches || rep.Workload.BlockEvents != w.BlockEvents() {
		t.Errorf("workload: got %d batches and %d block events, want %d and %d (not deterministic?)",
			rep.Workload.Batches, rep.Workload.BlockEvents, w.Batches, w.BlockEvents())
	}
	for _, ph := range []*Phase{rep.Main, rep.Paced} {
		// Router and engine blocks have the same size: one index write per
		// engine block.
		checks := []struct {
			what      string
			got, want uint64
		}{
			{"batches applied", ph.Batches, uint64(w.Batches)},
			{"messages", ph.Messages, uint64(w.Batches)},
			{"blocks stored", ph.BlocksStored, uint64(w.StoredBlocks)},
			{"blocks removed", ph.BlocksRemoved, uint64(w.RemovedBlocks)},
			{"block events", ph.BlockEvents, uint64(w.BlockEvents())},
			{"decode errors", ph.DecodeErrors, 0},
			{"gaps", ph.Gaps, 0},
			{"replays", ph.Replays, 0},
			{"batches dropped", ph.BatchesDropped, 0},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s: %s: got %d, want %d", ph.Name, c.what, c.got, c.want)
			}
		}
		if !ph.Verified {
			t.Errorf("%s: index not verified against the reference: %v", ph.Name, ph.Problems)
		}
		if ph.BlockEventsPerS <= 0 || ph.DurationS <= 0 || ph.LagP50Ms > ph.LagP99Ms || ph.LagP99Ms > ph.LagMaxMs {
			t.Errorf("%s: got rate %v over %vs, lags p50 %v p99 %v max %v: want positive and ordered",
				ph.Name, ph.BlockEventsPerS, ph.DurationS, ph.LagP50Ms, ph.LagP99Ms, ph.LagMaxMs)
		}
	}
	var tab bytes.Buffer
	if err := rep.WriteTable(&tab); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"saturation", "paced", "block events/s"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
}

// TestReferenceMatchesEngines checks the generated stream against the
// engine models it came from: applied directly, it leaves each pod holding
// exactly the blocks its engine caches at the end, in both forms and both
// removal groupings.
func TestReferenceMatchesEngines(t *testing.T) {
	base := tinyConfig()
	recs, err := trace.ReadFile(base.TracePath, base.MaxRequests)
	if err != nil {
		t.Fatal(err)
	}
	var blockEvents int64 = -1
	for _, tc := range []struct {
		name     string
		form     vllmwire.Form
		perChunk bool
	}{
		{"array", vllmwire.FormArray, false},
		{"map", vllmwire.FormMap, false},
		{"array/per-chunk", vllmwire.FormArray, true},
	} {
		cfg := base
		cfg.Form, cfg.RemovalsPerChunk = tc.form, tc.perChunk
		w, err := BuildWorkload(recs, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if blockEvents >= 0 && w.BlockEvents() != blockEvents {
			t.Errorf("%s: got %d block events, want %d as in the other cases", tc.name, w.BlockEvents(), blockEvents)
		}
		blockEvents = w.BlockEvents()
		if tc.perChunk && w.RemovedEvents >= w.RemovedBlocks {
			t.Errorf("%s: got %d removal events for %d blocks, want fewer events than blocks", tc.name, w.RemovedEvents, w.RemovedBlocks)
		}
		if !tc.perChunk && w.RemovedEvents != w.RemovedBlocks {
			t.Errorf("%s: got %d removal events for %d blocks, want one per block", tc.name, w.RemovedEvents, w.RemovedBlocks)
		}
		ref, counters, err := referenceApply(context.Background(), cfg, w)
		if err != nil {
			t.Fatal(err)
		}
		perPod := make([]int, cfg.Pods)
		for _, e := range ref {
			for i, word := range e.pods {
				for word != 0 {
					perPod[i*64+bits.TrailingZeros64(word)]++
					word &= word - 1
				}
			}
		}
		for p, ps := range w.Pods {
			if perPod[p] != ps.FinalBlocks {
				t.Errorf("%s: pod %s: index holds %d blocks, engine caches %d", tc.name, ps.ID, perPod[p], ps.FinalBlocks)
			}
		}
		checkCounters(t, tc.name, counters, w)
	}
}

// checkCounters compares a reference applier's counters with w's counts.
func checkCounters(t *testing.T, name string, c *events.Counters, w *Workload) {
	t.Helper()
	if got := c.Batches.Load(); got != uint64(w.Batches) {
		t.Errorf("%s: applied %d batches, want %d", name, got, w.Batches)
	}
	if got := c.BlocksStored.Load(); got != uint64(w.StoredBlocks) {
		t.Errorf("%s: stored %d blocks, want %d", name, got, w.StoredBlocks)
	}
	if got := c.BlocksRemoved.Load(); got != uint64(w.RemovedBlocks) {
		t.Errorf("%s: removed %d blocks, want %d", name, got, w.RemovedBlocks)
	}
	if got := c.RemovesUnknown.Load(); got != 0 {
		t.Errorf("%s: %d removals of blocks the applier did not track, want 0", name, got)
	}
}

// TestWorkloadBatches checks the batching model: batches decode, every
// stored event carries its blocks' tokens, and no batch stores more than
// a step's budget.
func TestWorkloadBatches(t *testing.T) {
	cfg := tinyConfig()
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		t.Fatal(err)
	}
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b events.Batch
	for _, ps := range w.Pods {
		for i, pl := range ps.Payloads {
			if err := vllmwire.DecodePayload(pl, &b, vllmwire.Limits{}); err != nil {
				t.Fatalf("pod %s batch %d: %v", ps.ID, i, err)
			}
			stored, blocks := 0, 0
			for _, ev := range b.Events {
				blocks += len(ev.BlockHashes)
				if ev.Kind != events.KindBlockStored {
					continue
				}
				stored += len(ev.BlockHashes)
				if len(ev.TokenIDs) != len(ev.BlockHashes)*cfg.EngineBlockSize || ev.BlockSize != cfg.EngineBlockSize {
					t.Fatalf("pod %s batch %d: got %d tokens of block size %d for %d blocks", ps.ID, i, len(ev.TokenIDs), ev.BlockSize, len(ev.BlockHashes))
				}
			}
			if limit := cfg.StepTokens / cfg.EngineBlockSize; stored > limit {
				t.Errorf("pod %s batch %d: got %d blocks stored, want at most a step's %d", ps.ID, i, stored, limit)
			}
			if blocks != int(ps.Blocks[i]) || blocks == 0 {
				t.Errorf("pod %s batch %d: got %d block events, want %d (and not 0)", ps.ID, i, blocks, ps.Blocks[i])
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name  string
		mod   func(*Config)
		field string
	}{
		{"default", func(*Config) {}, ""},
		{"quick", func(c *Config) { *c = QuickConfig() }, ""},
		{"no trace", func(c *Config) { c.TracePath = "" }, "TracePath"},
		{"negative requests", func(c *Config) { c.MaxRequests = -1 }, "MaxRequests"},
		{"no pods", func(c *Config) { c.Pods = 0 }, "Pods"},
		{"too many pods", func(c *Config) { c.Pods = 257 }, "Pods"},
		{"engine block size", func(c *Config) { c.EngineBlockSize = 24 }, "EngineBlockSize"},
		{"router block size", func(c *Config) { c.RouterBlockSize = 0 }, "RouterBlockSize"},
		{"blocks per pod", func(c *Config) { c.BlocksPerPod = 0 }, "BlocksPerPod"},
		{"step tokens", func(c *Config) { c.StepTokens = 8 }, "StepTokens"},
		{"form", func(c *Config) { c.Form = vllmwire.FormTrimNils }, "Form"},
		{"rate", func(c *Config) { c.Rate = -1 }, "Rate"},
		{"paced fraction", func(c *Config) { c.PacedFraction = 2 }, "PacedFraction"},
		{"timeout", func(c *Config) { c.Timeout = 0 }, "Timeout"},
	}
	for _, tc := range cases {
		c := DefaultConfig()
		tc.mod(&c)
		err := c.Validate()
		if tc.field == "" && err != nil || tc.field != "" && (err == nil || !strings.Contains(err.Error(), "Config."+tc.field)) {
			t.Errorf("%s: got %v, want an error naming %q (none if empty)", tc.name, err, tc.field)
		}
	}
}
