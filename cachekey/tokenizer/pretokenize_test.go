package tokenizer

import (
	"slices"
	"strings"
	"testing"
)

// splitAll returns the pieces that pattern p cuts s into.
func splitAll(p splitPattern, s string) []string {
	var out []string
	for i := 0; i < len(s); {
		end := p.next(s, i)
		out = append(out, s[i:end])
		i = end
	}
	return out
}

// TestSplitPatterns checks the scanner against splits worked out by hand
// from each regex's semantics (leftmost-first alternation, greedy
// quantifiers, backtracking into \s+ for the (?!\S) lookahead).
func TestSplitPatterns(t *testing.T) {
	tests := []struct {
		name string
		p    splitPattern
		in   string
		want []string
	}{
		{"llama3 empty", patternLlama3, "", nil},
		{"llama3 words", patternLlama3, "Hello world", []string{"Hello", " world"}},
		{"llama3 contraction", patternLlama3, "It's", []string{"It", "'s"}},
		{"llama3 contraction upper", patternLlama3, "I'LL", []string{"I", "'LL"}},
		{"llama3 two contractions", patternLlama3, "we'd've", []string{"we", "'d", "'ve"}},
		{"llama3 long s folds to s", patternLlama3, "'ſ", []string{"'ſ"}},
		{"llama3 apostrophe word", patternLlama3, "'hello", []string{"'hello"}},
		{"llama3 digits by three", patternLlama3, "12345", []string{"123", "45"}},
		{"llama3 letters digits", patternLlama3, "abc123def", []string{"abc", "123", "def"}},
		{"llama3 space before digits", patternLlama3, " 123", []string{" ", "123"}},
		{"llama3 space run before word", patternLlama3, "  hello", []string{" ", " hello"}},
		{"llama3 trailing spaces", patternLlama3, "hello  ", []string{"hello", "  "}},
		{"llama3 blank line", patternLlama3, "a\n\nb", []string{"a", "\n\n", "b"}},
		{"llama3 space newline space", patternLlama3, "a \n b", []string{"a", " \n", " b"}},
		{"llama3 mixed whitespace", patternLlama3, "x  \n\n  y", []string{"x", "  \n\n", " ", " y"}},
		{"llama3 punctuation newlines", patternLlama3, "!!!\n\nfoo", []string{"!!!\n\n", "foo"}},
		{"llama3 space punctuation", patternLlama3, " ... ok", []string{" ...", " ok"}},
		{"llama3 tab word", patternLlama3, "\thello", []string{"\thello"}},
		{"llama3 accents", patternLlama3, "naïve café", []string{"naïve", " café"}},
		{"llama3 cjk", patternLlama3, "日本語", []string{"日本語"}},
		{"llama3 emoji space", patternLlama3, "😀 hi", []string{"😀", " hi"}},
		{"llama3 emoji letters", patternLlama3, "😀hi", []string{"😀hi"}},
		{"llama3 vulgar fractions", patternLlama3, "½½½½", []string{"½½½", "½"}},
		{"llama3 crlf", patternLlama3, "a\r\nb", []string{"a", "\r\n", "b"}},
		{"llama3 final newline", patternLlama3, "end\n", []string{"end", "\n"}},
		{"llama3 nbsp word", patternLlama3, "x\u00a0y", []string{"x", "\u00a0y"}},
		{"llama3 brackets", patternLlama3, "(foo)", []string{"(foo", ")"}},
		{"llama3 invalid utf8", patternLlama3, "a\xffb", []string{"a", "\xffb"}},
		{"qwen2 single digits", patternQwen2, "12345", []string{"1", "2", "3", "4", "5"}},
		{"qwen2 words", patternQwen2, "It's 42!", []string{"It", "'s", " ", "4", "2", "!"}},
		{"gpt2 words", patternGPT2, "Hello world", []string{"Hello", " world"}},
		{"gpt2 case-sensitive contraction", patternGPT2, "I'LL", []string{"I", "'", "LL"}},
		{"gpt2 contraction", patternGPT2, "we'll", []string{"we", "'ll"}},
		{"gpt2 number runs", patternGPT2, "12345 678", []string{"12345", " 678"}},
		{"gpt2 space run before word", patternGPT2, "  hello", []string{" ", " hello"}},
		{"gpt2 blank line", patternGPT2, "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"gpt2 punctuation", patternGPT2, "hello!!! ok", []string{"hello", "!!!", " ok"}},
		{"gpt2 tab word", patternGPT2, "\thello", []string{"\t", "hello"}},
		{"gpt2 space tab", patternGPT2, "x \ty", []string{"x", " ", "\t", "y"}},
		{"gpt2 emoji", patternGPT2, "😀 hi", []string{"😀", " hi"}},
		{"gpt2 trailing spaces", patternGPT2, "a  ", []string{"a", "  "}},
		{"none keeps all", patternNone, "a b  c", []string{"a b  c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitAll(tt.p, tt.in)
			if !slices.Equal(got, tt.want) {
				t.Errorf("split(%q) got %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// TestPatternFor checks that the three known regexes are recognized and
// others are not.
func TestPatternFor(t *testing.T) {
	tests := []struct {
		regex string
		want  splitPattern
		ok    bool
	}{
		{gpt2Regex, patternGPT2, true},
		{llama3Regex, patternLlama3, true},
		{qwen2Regex, patternQwen2, true},
		{strings.Replace(llama3Regex, "{1,3}", "{1,2}", 1), patternNone, false},
		{`\s+`, patternNone, false},
	}
	for _, tt := range tests {
		got, ok := patternFor(tt.regex)
		if got != tt.want || ok != tt.ok {
			t.Errorf("patternFor(%q) got %v %v, want %v %v", tt.regex, got, ok, tt.want, tt.ok)
		}
	}
}
