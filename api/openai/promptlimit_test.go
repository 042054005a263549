package openai

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestPromptLimitsFor(t *testing.T) {
	l := PromptLimits{MaxBytes: 100, MaxTokens: 10, Models: map[string]PromptLimit{"small": {MaxTokens: 5}, "big": {MaxBytes: 1000, MaxTokens: 50}}}
	for _, tc := range []struct {
		model string
		want  PromptLimit
	}{{"other", PromptLimit{100, 10}}, {"small", PromptLimit{100, 5}}, {"big", PromptLimit{1000, 50}}} {
		if got := l.For(tc.model); got != tc.want {
			t.Errorf("For(%q): got %+v, want %+v", tc.model, got, tc.want)
		}
	}
	for _, bad := range []PromptLimits{{MaxBytes: -1}, {MaxTokens: -1}, {Models: map[string]PromptLimit{"m": {MaxTokens: -2}}}} {
		if err := bad.Validate("routing.prompt_limits"); err == nil || !strings.Contains(err.Error(), "routing.prompt_limits.") {
			t.Errorf("Validate(%+v): got %v, want an error naming the field", bad, err)
		}
	}
	if err := DefaultPromptLimits().Validate("x"); err != nil {
		t.Errorf("defaults: %v", err)
	}
}

func TestPromptLimitChecks(t *testing.T) {
	lim := PromptLimit{MaxBytes: 10, MaxTokens: 3}
	parse := func(kind Kind, body string) *Request {
		r, err := ParseRequest(kind, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := []struct {
		name      string
		req       *Request
		tokens    int
		wantParam string // "" for no refusal
		wantUnit  string
	}{
		{"short text", parse(KindCompletion, `{"prompt":"0123456789"}`), 3, "", ""},
		{"long text", parse(KindCompletion, `{"prompt":"0123456789A"}`), 0, "prompt", "bytes"},
		{"chat counts every message", parse(KindChat, `{"messages":[{"role":"system","content":"012345"},{"role":"user","content":"6789A"}]}`), 0, "messages", "bytes"},
		{"chat within", parse(KindChat, `{"messages":[{"role":"user","content":"0123456789"}]}`), 3, "", ""},
		{"too many tokens after tokenizing", parse(KindChat, `{"messages":[{"role":"user","content":"hi"}]}`), 4, "messages", "tokens"},
		{"ids are counted as tokens only", parse(KindCompletion, `{"prompt":[1,2,3,4,5,6,7,8,9,10,11,12]}`), 12, "prompt", "tokens"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := lim.CheckText(tc.req)
			if err == nil {
				err = lim.CheckTokens(tc.req.Kind == KindChat, tc.tokens)
			}
			if tc.wantParam == "" {
				if err != nil {
					t.Fatalf("got %v, want no refusal", err)
				}
				return
			}
			pe, ok := err.(*PromptTooLongError)
			if !ok || pe.Param != tc.wantParam || pe.Tokens != (tc.wantUnit == "tokens") || !strings.Contains(pe.Error(), tc.wantUnit) {
				t.Fatalf("got %v, want a refusal of %s in %s", err, tc.wantParam, tc.wantUnit)
			}
			rec := httptest.NewRecorder()
			pe.Write(rec)
			var eb struct {
				Error struct {
					Type, Message, Param, Code string
				}
			}
			if rec.Code != 400 || json.Unmarshal(rec.Body.Bytes(), &eb) != nil || eb.Error.Code != CodeContextLength ||
				eb.Error.Type != TypeInvalidRequest || eb.Error.Param != tc.wantParam {
				t.Fatalf("answer: got %d %s, want 400 context_length_exceeded for %s", rec.Code, rec.Body, tc.wantParam)
			}
		})
	}
	if err := (PromptLimit{}).CheckText(parse(KindCompletion, `{"prompt":"`+strings.Repeat("x", 1<<16)+`"}`)); err != nil {
		t.Errorf("no limit: got %v", err)
	}
}

// BenchmarkCheckText is what the bytes check adds to a chat request.
func BenchmarkCheckText(b *testing.B) {
	req, err := ParseRequest(KindChat, []byte(`{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"`+strings.Repeat("word ", 2000)+`"}]}`))
	if err != nil {
		b.Fatal(err)
	}
	lim := DefaultPromptLimits().For("m")
	b.ReportAllocs()
	for b.Loop() {
		if lim.CheckText(req) != nil {
			b.Fatal("refused")
		}
	}
}
