package cell

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// TestCellRefusesLongPrompts checks the prompt limits at the cell: a text
// prompt over its model's bytes is refused with 400
// context_length_exceeded before anything tokenizes it (the pod's
// /tokenize, which the cell calls without a tokenizer of its own, is never
// asked), token ids over the token limit likewise, and a prompt within
// the bytes but over the tokens once the pod tokenized it; nothing is
// forwarded; a prompt within both passes.
func TestCellRefusesLongPrompts(t *testing.T) {
	pod := newFakePod(t, "pod-a")
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "pod-a", Address: pod.addr(), KVBlocks: 10000}}
	cfg.Routing.PromptLimits = openai.PromptLimits{MaxBytes: 1 << 20, MaxTokens: 1 << 20,
		Models: map[string]openai.PromptLimit{"m": {MaxBytes: 1000, MaxTokens: 100}}}
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	body := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	tokenizes := func() int { pod.mu.Lock(); defer pod.mu.Unlock(); return pod.tokenizes }
	tests := []struct {
		name, body, param, unit string
		tokenized               bool
	}{
		{"text over its bytes", body(map[string]any{"model": "m", "prompt": strings.Repeat("x", 1001)}), "prompt", "bytes", false},
		{"ids over its tokens", body(map[string]any{"model": "m", "prompt": make([]int, 101)}), "prompt", "tokens", false},
		{"text over its tokens once tokenized", body(map[string]any{"model": "m", "prompt": strings.Repeat("y", 500)}), "prompt", "tokens", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tokenizes()
			status, _, b := servertest.Do(t, "POST", base+"/v1/completions", tc.body)
			d := servertest.ErrorBody(t, b)
			if status != 400 || strings.Trim(string(d.Code), `"`) != openai.CodeContextLength || d.Param == nil || *d.Param != tc.param ||
				!strings.Contains(d.Message, tc.unit) {
				t.Fatalf("got %d %s, want 400 context_length_exceeded for %s in %s", status, b, tc.param, tc.unit)
			}
			if got := tokenizes() != before; got != tc.tokenized {
				t.Fatalf("tokenized: got %v, want %v", got, tc.tokenized)
			}
		})
	}
	if n := pod.count(); n != 0 {
		t.Fatalf("the pod served %d refused prompts, want 0", n)
	}
	if status, _, b := servertest.Do(t, "POST", base+"/v1/completions", body(map[string]any{"model": "m", "prompt": strings.Repeat("z", 90)})); status != 200 {
		t.Fatalf("a prompt within both limits: got %d %s", status, b)
	}
}
