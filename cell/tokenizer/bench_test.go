package tokenizer

import (
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
