package fairness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// prompt is one replayable request: its token ids and output length.
type prompt struct {
	tokens    []uint32
	maxTokens int
}

// prompts expands the records into prompts, each capped at cfg's limits.
func prompts(cfg Config, recs []trace.Record) []prompt {
	out := make([]prompt, 0, len(recs))
	blocks := cfg.MaxInputTokens / 512
	for _, r := range recs {
		ids := r.HashIDs[:min(len(r.HashIDs), blocks)]
		var toks []uint32
		for _, id := range ids {
			toks = trace.AppendTokens(toks, id)
		}
		toks = toks[:min(len(toks), r.InputLength, cfg.MaxInputTokens)]
		out = append(out, prompt{tokens: toks, maxTokens: min(r.OutputLength, cfg.MaxOutputTokens)})
	}
	return out
}

// serviceTime is the modelled time one prompt holds a running slot with
// nothing cached: its prefill plus its decode.
func serviceTime(cfg Config, p prompt) time.Duration {
	return time.Duration(len(p.tokens))*cfg.PrefillPerToken + time.Duration(max(p.maxTokens-1, 0))*cfg.DecodePerToken
}

// capacity estimates the fleet's requests per second over ps: its running
// slots over the mean service time.
func capacity(cfg Config, ps []prompt) float64 {
	var sum time.Duration
	for _, p := range ps {
		sum += serviceTime(cfg, p)
	}
	mean := sum.Seconds() / float64(len(ps))
	return float64(cfg.Pods*cfg.MaxRunning) / mean
}

// tenant is one replaying tenant: its key file entry and its traffic.
type tenant struct {
	name     string
	priority auth.Priority
	weight   float64
	maxWait  time.Duration
	// rate is its requests per second; offset where in the prompts it
	// starts replaying.
	rate   float64
	offset int
}

// key is the tenant's API key (the benchmark's own throwaway keys).
func (t *tenant) key() string { return "fairness-" + t.name }

// keyFile renders the cell's key file for ts: one inference key each.
func keyFile(ts []*tenant) []byte {
	var b strings.Builder
	b.WriteString("tenants:\n")
	for _, t := range ts {
		// No concurrency cap: what holds a tenant back is flow control.
		fmt.Fprintf(&b, "  - {name: %s, priority: %s, weight: %g, max_queue_wait: %s, max_concurrent: 0}\n", t.name, t.priority, t.weight, t.maxWait)
	}
	b.WriteString("keys:\n")
	for _, t := range ts {
		fmt.Fprintf(&b, "  - {sha256: %s, tenant: %s, scopes: [inference]}\n", auth.HashKey(t.key()).String(), t.name)
	}
	return []byte(b.String())
}

// body is the JSON of a streamed completion of p.
func body(model string, p prompt) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "prompt": p.tokens, "max_tokens": p.maxTokens,
		"stream": true, "stream_options": map[string]any{"include_usage": true}})
	return b
}

// loadPrompts reads cfg.Records records of the trace and expands them.
func loadPrompts(cfg Config) ([]prompt, error) {
	path, err := trace.Locate(cfg.TracePath)
	if err != nil {
		return nil, err
	}
	recs, err := trace.ReadFile(filepath.Clean(path), cfg.Records)
	if err != nil {
		return nil, err
	}
	if len(recs) < 4 {
		return nil, fmt.Errorf("fairness: the trace %s has %d records, want at least 4", path, len(recs))
	}
	return prompts(cfg, recs), nil
}
