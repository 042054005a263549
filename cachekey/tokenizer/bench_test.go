package tokenizer

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// englishPrompt returns English-like text of at least minTokens tokens
// under tok: the sample corpus's paragraphs, shuffled deterministically and
// numbered so that the text is not one block repeated.
func englishPrompt(tok *BPE, minTokens int) string {
	paras := strings.Split(sampleCorpus, "\n\n")
	var b strings.Builder
	for i := 0; len(tok.EncodeString(b.String(), false, nil)) < minTokens; i++ {
		b.WriteString(paras[(i*7)%len(paras)])
		b.WriteString("\n\nSection ")
		b.WriteString(strings.Repeat("I", 1+i%5))
		b.WriteString(".\n\n")
	}
	return b.String()
}

// benchEncode encodes a 2k-token prompt per iteration and reports ns/token.
func benchEncode(b *testing.B, tok *BPE, text string) {
	b.Helper()
	dst := tok.EncodeString(text, true, nil)
	n := len(dst)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		dst = tok.EncodeString(text, true, dst[:0])
	}
	b.StopTimer()
	b.ReportMetric(float64(n), "tokens/op")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
}

// BenchmarkEncode2k measures a 2k-token English prompt on each byte-level
// fixture, with a warm word cache (the steady state of a router) and with
// no cache (every piece merged from bytes, the worst case).
func BenchmarkEncode2k(b *testing.B) {
	for _, name := range []string{"llama3", "qwen2", "gpt2", "sentencepiece"} {
		for _, cache := range []struct {
			label string
			size  int
		}{{"cached", 0}, {"nocache", -1}} {
			b.Run(name+"/"+cache.label, func(b *testing.B) {
				tok := loadFixture(b, name, Options{CacheSize: cache.size})
				benchEncode(b, tok, englishPrompt(tok, 2000))
			})
		}
	}
}

// BenchmarkEncode2kParallel measures concurrent encoders sharing one
// tokenizer and its cache.
func BenchmarkEncode2kParallel(b *testing.B) {
	tok := loadFixture(b, "llama3", Options{})
	text := englishPrompt(tok, 2000)
	n := len(tok.EncodeString(text, true, nil))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var dst []uint32
		for pb.Next() {
			dst = tok.EncodeString(text, true, dst[:0])
		}
	})
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/token")
}

// BenchmarkSplit measures the pre-tokenizer scanner alone.
func BenchmarkSplit(b *testing.B) {
	tok := loadFixture(b, "llama3", Options{})
	text := englishPrompt(tok, 2000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for j := 0; j < len(text); {
			j = patternLlama3.next(text, j)
		}
	}
}

// BenchmarkLoad measures loading a fixture tokenizer.json.
func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		loadFixture(b, "qwen2", Options{})
	}
}

// conversation returns a chat of turns user/assistant message pairs of
// about 300 tokens each under tok, built from the sample corpus.
func conversation(tok *BPE, turns int) []Message {
	var msgs []Message
	for i := 0; i < turns; i++ {
		body := englishPrompt(tok, 300+i)
		msgs = append(msgs, Message{Role: "user", Content: fmt.Sprintf("Question %d: %s", i, body)},
			Message{Role: "assistant", Content: fmt.Sprintf("Answer %d: %s", i, body[len(body)/2:])})
	}
	return msgs
}

// BenchmarkEncodeChatTurns measures the steady state of a multi-turn
// conversation: the 8th turn (about 5k tokens) encoded after the earlier
// turns were, with no segment cache and with one (only the new messages
// are encoded; the rest come from the cache).
func BenchmarkEncodeChatTurns(b *testing.B) {
	for _, seg := range []bool{false, true} {
		name := "nosegments"
		if seg {
			name = "segments"
		}
		b.Run(name, func(b *testing.B) {
			opts := Options{ChatTemplate: chatTemplates["qwen2"]}
			if seg {
				opts.Segments = NewTokenCache(64 << 20)
			}
			tok := loadFixture(b, "qwen2", opts)
			msgs := conversation(tok, 8)
			for k := 1; k < 8; k++ {
				tok.EncodeChat(context.Background(), msgs[:2*k-1], nil)
			}
			last := msgs[:15]
			dst, _ := tok.EncodeChat(context.Background(), last, nil)
			n := len(dst)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst, _ = tok.EncodeChat(context.Background(), last, dst[:0])
			}
			b.StopTimer()
			b.ReportMetric(float64(n), "tokens/op")
		})
	}
}

// BenchmarkTokenCacheGet measures a hit on a 2k-token entry: hash the
// text, look up, copy the ids out.
func BenchmarkTokenCacheGet(b *testing.B) {
	tok := loadFixture(b, "qwen2", Options{})
	text := englishPrompt(tok, 2000)
	c := NewTokenCache(64 << 20)
	ids := tok.EncodeString(text, false, nil)
	c.Put(KeyOf(1, text), ids)
	dst := make([]uint32, 0, len(ids))
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		dst, _ = c.Get(KeyOf(1, text), dst[:0])
	}
}
