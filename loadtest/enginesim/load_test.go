package enginesim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/enginemetrics"
)

// TestMetricsReportRunningLoad checks that /metrics reports the running
// batch as vLLM does, in a form the cell's parser reads: while requests
// run and wait, the waiting and running counts, the KV blocks in use and
// the adapters; afterwards, an idle engine (usage 0 although its prefix
// cache holds blocks).
func TestMetricsReportRunningLoad(t *testing.T) {
	cfg := testConfig()
	cfg.Blocks = 100
	cfg.MaxRunning = 2
	cfg.LoRAAdapters = []string{"sql-lora", "chat-lora"}
	cfg.MaxLoRAs = 2
	cfg.DecodePerToken = 50 * time.Millisecond
	cfg.TimeScale = 1
	p := startPod(t, cfg)
	fams := []enginemetrics.Names{enginemetrics.VLLMNames()}
	read := func() enginemetrics.Sample {
		t.Helper()
		r := get(t, p, PathMetrics)
		var s enginemetrics.Sample
		if err := enginemetrics.Parse(r.body, fams, []enginemetrics.Engine{enginemetrics.EngineVLLM}, &s); err != nil {
			t.Fatalf("parse /metrics: %v\n%s", err, r.body)
		}
		return s
	}
	// Three requests of 32 prompt + 16 output tokens (3 blocks each): two
	// run, one waits.
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for i, model := range []string{"sql-lora", "sql-lora", "chat-lora"} {
		body, _ := json.Marshal(map[string]any{"model": model, "prompt": tokens(100+i, 32), "max_tokens": 16})
		wg.Go(func() {
			resp, err := http.Post(p.URL()+openai.PathCompletions, "application/json", bytes.NewReader(body))
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("%s: status %d", model, resp.StatusCode)
				}
			}
			errs <- err
		})
		// Admit them in order, so that chat-lora is the one waiting.
		deadline := time.Now().Add(10 * time.Second)
		for s := read(); s.Running+s.Waiting < float64(i+1); s = read() {
			if time.Now().After(deadline) {
				t.Fatalf("request %d never arrived: %+v", i, s)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	s := read()
	if s.Running != 2 || s.Waiting != 1 || s.KVUsage != 0.06 || s.CapacityTokens != 100*16 {
		t.Fatalf("busy: %+v, want 2 running, 1 waiting, usage 6/100, capacity 1600 tokens", s)
	}
	if !s.HasLoRA || strings.Join(s.RunningLoRA, ",") != "sql-lora" || strings.Join(s.WaitingLoRA, ",") != "chat-lora" || s.MaxLoRA != 2 {
		t.Fatalf("busy adapters: %+v", s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for s = read(); s.Running+s.Waiting > 0 || s.KVUsage != 0 || len(s.RunningLoRA)+len(s.WaitingLoRA) > 0; s = read() {
		if time.Now().After(deadline) {
			t.Fatalf("idle: %+v, want nothing running, usage 0, no adapters", s)
		}
		time.Sleep(2 * time.Millisecond)
	}
	if r := post(t, p, openai.PathCompletions, map[string]any{"model": "other-lora", "prompt": tokens(1, 4)}); r.status != http.StatusNotFound {
		t.Fatalf("unknown adapter: status %d, want 404", r.status)
	}
}
