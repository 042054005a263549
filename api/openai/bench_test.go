package openai

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// tokenBody returns a completions body with an n-token prompt of realistic
// token ids (up to six digits) and a few sampling fields.
func tokenBody(n int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":[`)
	x := uint32(12345)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		x = x*1664525 + 1013904223
		b.WriteString(strconv.Itoa(int(x % 128256)))
	}
	b.WriteString(`],"max_tokens":128,"temperature":0.7,"stream":true,"stream_options":{"include_usage":true},"cache_salt":"tenant-a"}`)
	return []byte(b.String())
}

// chatBody returns a chat body of about n characters of content.
func chatBody(n int) []byte {
	content := strings.Repeat("The quick brown fox jumps over the lazy dog. ", n/45+1)
	msgs := []map[string]any{
		{"role": "system", "content": "You are a helpful assistant."},
		{"role": "user", "content": content},
	}
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "max_completion_tokens": 256, "stream": true})
	return b
}

func BenchmarkParseCompletionTokens4k(b *testing.B) {
	body := tokenBody(4096)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := ParseCompletion(body)
		if err != nil || len(req.Prompt.Tokens) != 4096 {
			b.Fatalf("ParseCompletion: %v", err)
		}
	}
}

// BenchmarkEncodingJSONTokens4k is the baseline: encoding/json decoding the
// same body into a struct with a []uint32 prompt.
func BenchmarkEncodingJSONTokens4k(b *testing.B) {
	body := tokenBody(4096)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		var r struct {
			Model  string   `json:"model"`
			Prompt []uint32 `json:"prompt"`
			Stream bool     `json:"stream"`
		}
		if err := json.Unmarshal(body, &r); err != nil || len(r.Prompt) != 4096 {
			b.Fatalf("Unmarshal: %v", err)
		}
	}
}

func BenchmarkParseChat16k(b *testing.B) {
	body := chatBody(16 << 10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseChat(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPrefillBodyTokens4k(b *testing.B) {
	body := tokenBody(4096)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PrefillBody(body); err != nil {
			b.Fatal(err)
		}
	}
}
