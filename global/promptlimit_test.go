package global

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestGlobalRefusesLongPrompts checks the prompt limits at the global
// tier: a text prompt or chat over its model's bytes is refused with 400
// context_length_exceeded before the tokenizer sees it (its cache, which
// every encode consults, is not asked), token ids over the token limit
// likewise, and a chat within the bytes but over the tokens once
// tokenized; nothing reaches the cell or its pod; a prompt within both
// passes.
func TestGlobalRefusesLongPrompts(t *testing.T) {
	s := startSecureTier(t, func(c *Config) {
		c.Limits.MaxBodyBytes = 64 << 10
		c.Prompts = openai.PromptLimits{MaxBytes: 1 << 20, MaxTokens: 1 << 20,
			Models: map[string]openai.PromptLimit{"m": {MaxBytes: 1000, MaxTokens: 20}}}
		c.Tokenize.Models = []ModelTokenizer{{Model: "m", File: fixtureTokenizer, ChatTemplate: "chatml"}}
	})
	lookups := func() uint64 { st := s.g.rt.Tokenizer().CacheStats(); return st.Hits + st.Misses }
	key := map[string]string{"Authorization": "Bearer lab-key"}
	body := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	ids := make([]int, 30)
	tests := []struct {
		name, path, body, param, unit string
	}{
		{"text over its bytes", "/v1/completions", body(map[string]any{"model": "m", "prompt": strings.Repeat("x", 1001)}), "prompt", "bytes"},
		{"chat over its bytes", "/v1/chat/completions", body(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "system", "content": strings.Repeat("s", 600)}, {"role": "user", "content": strings.Repeat("u", 600)}}}), "messages", "bytes"},
		{"ids over its tokens", "/v1/completions", body(map[string]any{"model": "m", "prompt": ids}), "prompt", "tokens"},
		{"text over its tokens once tokenized", "/v1/chat/completions", body(map[string]any{"model": "m", "messages": []map[string]string{
			{"role": "user", "content": strings.Repeat("cache router ", 30)}}}), "messages", "tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := lookups()
			status, _, b := s.call(t, "POST", tc.path, tc.body, key)
			if tokenized := lookups() != before; tokenized != (tc.name == "text over its tokens once tokenized") {
				t.Errorf("tokenized: got %v (cache lookups %d then %d)", tokenized, before, lookups())
			}
			d := servertest.ErrorBody(t, b)
			if status != 400 || strings.Trim(string(d.Code), `"`) != openai.CodeContextLength || d.Param == nil || *d.Param != tc.param ||
				d.Type != openai.TypeInvalidRequest || !strings.Contains(d.Message, tc.unit) {
				t.Fatalf("got %d %s, want 400 context_length_exceeded for %s in %s", status, b, tc.param, tc.unit)
			}
		})
	}
	if n := s.pod.count(); n != 0 {
		t.Fatalf("the pod saw %d requests (inference or /tokenize) for refused prompts, want 0", n)
	}
	_, _, page := s.call(t, "GET", "/metrics", "", map[string]string{"Authorization": "Bearer ops-key"})
	for _, c := range []struct {
		limit string
		want  float64
	}{{"prompt_bytes", 2}, {"prompt_tokens", 2}} {
		if v, _ := servertest.MetricValue(page, `cellrouter_limit_hits_total{limit="`+c.limit+`"}`); v != c.want {
			t.Errorf("%s hits: got %v, want %v", c.limit, v, c.want)
		}
	}
	if status, _, b := s.call(t, "POST", "/v1/completions", tierCompletion, key); status != 200 {
		t.Fatalf("a prompt of 17 ids within 20: got %d %s", status, b)
	}
}
