package proxy

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestUsageScanner(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want *Usage
	}{
		{"none", `{"id":"x","choices":[]}`, nil},
		{"null usage", `data: {"choices":[],"usage":null}` + "\n\n", nil},
		{"response body", completionJSON, &Usage{PromptTokens: 12, CompletionTokens: 2, CachedTokens: 8}},
		{"spaced", `{"usage" :  { "prompt_tokens" : 3 , "completion_tokens":4}}`, &Usage{PromptTokens: 3, CompletionTokens: 4}},
		{"last wins", `data: {"usage":{"prompt_tokens":1,"completion_tokens":1}}` + "\n\n" + `data: {"usage":{"prompt_tokens":1,"completion_tokens":2}}` + "\n\n", &Usage{PromptTokens: 1, CompletionTokens: 2}},
		{"key in a string is not usage", `{"text":"\"usage\":{\"prompt_tokens\":9}","choices":[]}`, nil},
		{"word usage as a value", `{"a":"usage","b":{"c":1}}`, nil},
		{"quote before key", `{"x":"","usage":{"prompt_tokens":5}}`, &Usage{PromptTokens: 5}},
		{"braces inside strings", `{"usage":{"prompt_tokens":6,"note":"}{"}}`, &Usage{PromptTokens: 6}},
		{"bad usage object ignored", `{"usage":{"prompt_tokens":"many"}}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every split point must give the same answer as one piece.
			for cut := 0; cut <= len(tt.in); cut++ {
				var s usageScanner
				s.Write([]byte(tt.in[:cut]))
				s.Write([]byte(tt.in[cut:]))
				if got := s.usage(); !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("cut at %d: got %+v, want %+v", cut, got, tt.want)
				}
			}
		})
	}
	var nilScanner *usageScanner
	if nilScanner.usage() != nil {
		t.Errorf("nil scanner: got usage, want nil")
	}
}

// FuzzUsageScanner checks that the scanner never panics, that its answer
// does not depend on how the input is split, and that for a JSON object with
// a top-level usage object it agrees with encoding/json.
func FuzzUsageScanner(f *testing.F) {
	f.Add([]byte(completionJSON), 10)
	f.Add([]byte(`data: {"choices":[],"usage":{"prompt_tokens":40,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":32}}}`+"\n\n"+"data: [DONE]\n\n"), 50)
	f.Add([]byte(`{"usage":null,"x":"\"usage\":{}"}`), 3)
	f.Add([]byte(`{"usage":{"prompt_tokens":1e3}}`), 0)
	f.Fuzz(func(t *testing.T, in []byte, cut int) {
		if cut < 0 {
			cut = -cut
		}
		if len(in) > 0 {
			cut %= len(in) + 1
		} else {
			cut = 0
		}
		var whole, split usageScanner
		whole.Write(in)
		split.Write(in[:cut])
		split.Write(in[cut:])
		if a, b := whole.usage(), split.usage(); !reflect.DeepEqual(a, b) {
			t.Fatalf("split at %d: got %+v, whole %+v", cut, b, a)
		}
		var ref struct {
			Usage *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if json.Unmarshal(in, &ref) != nil || ref.Usage == nil {
			return
		}
		got := whole.usage()
		if got == nil {
			// The object may be oversized, or a nested "usage" key may
			// have come later; only a short, flat body must be found.
			return
		}
		if len(in) < 200 && (got.PromptTokens != ref.Usage.PromptTokens || got.CompletionTokens != ref.Usage.CompletionTokens) {
			// A nested usage after the top-level one wins in the scanner;
			// accept only when the input has one "usage" key.
			if countUsageKeys(in) == 1 {
				t.Fatalf("got %+v, encoding/json says %+v", got, *ref.Usage)
			}
		}
	})
}

func countUsageKeys(b []byte) int {
	n := 0
	for i := 0; i+len(usageKey) <= len(b); i++ {
		if string(b[i:i+len(usageKey)]) == usageKey {
			n++
		}
	}
	return n
}
