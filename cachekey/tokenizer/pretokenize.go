package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// splitPattern identifies one of the pre-tokenizer split regexes that the
// scanner reproduces. Go's regexp has no lookahead, so instead of compiling
// the pattern the scanner implements each one's leftmost-first, greedy
// semantics by hand; patternFor recognizes the exact pattern strings.
type splitPattern uint8

const (
	// patternNone keeps the whole input as one piece.
	patternNone splitPattern = iota
	// patternGPT2 is GPT-2's pattern, also the implicit one of a ByteLevel
	// pre-tokenizer with use_regex:
	//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
	patternGPT2
	// patternLlama3 is the pattern of Llama-3 (and GPT-4's cl100k):
	//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
	//    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	patternLlama3
	// patternQwen2 is Llama-3's pattern with single digits (\p{N} instead
	// of \p{N}{1,3}), used by Qwen2, Qwen2.5 and Qwen3.
	patternQwen2
	// patternMetaspace is not a regex of tokenizer.json: it cuts
	// SentencePiece-normalized text before each "▁" that follows another
	// character, so that "▁the▁cat" becomes "▁the", "▁cat". Load uses it
	// only when no merge can build a token with "▁" after another
	// character, which makes BPE on the pieces equal to BPE on the whole
	// text (no merge crosses a cut), only faster and cacheable.
	patternMetaspace
)

// Pattern strings as they appear in tokenizer.json Split pre-tokenizers.
const (
	gpt2Regex   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	qwen2Regex  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// patternFor returns the scanner for a Split regex string.
func patternFor(regex string) (splitPattern, bool) {
	switch regex {
	case gpt2Regex:
		return patternGPT2, true
	case llama3Regex:
		return patternLlama3, true
	case qwen2Regex:
		return patternQwen2, true
	}
	return patternNone, false
}

// Character classes of the split patterns. Every character is exactly one
// of letter (\p{L}), number (\p{N}), newline (\r or \n, which is also \s),
// space (any other \s) or other. Bytes of invalid UTF-8 count as other.
const (
	clsOther uint8 = iota
	clsLetter
	clsNumber
	clsSpace
	clsNewline
)

// asciiClass is the class of each ASCII byte.
var asciiClass [128]uint8

func init() {
	for b := 0; b < 128; b++ {
		r := rune(b)
		switch {
		case r == '\r' || r == '\n':
			asciiClass[b] = clsNewline
		case unicode.IsSpace(r):
			asciiClass[b] = clsSpace
		case unicode.IsLetter(r):
			asciiClass[b] = clsLetter
		case unicode.IsNumber(r):
			asciiClass[b] = clsNumber
		}
	}
}

// classAt returns the class and byte width of the character at s[i].
// Go's unicode.IsSpace is the same set as Oniguruma's Unicode \s (the ASCII
// controls \t..\r, space, U+0085 and the Zs, Zl and Zp categories).
func classAt(s string, i int) (uint8, int) {
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	switch {
	case unicode.IsLetter(r):
		return clsLetter, w
	case unicode.IsNumber(r):
		return clsNumber, w
	case unicode.IsSpace(r):
		return clsSpace, w
	}
	return clsOther, w
}

// Class masks for run: a bit per class.
const (
	mLetter  = 1 << clsLetter
	mNumber  = 1 << clsNumber
	mOther   = 1 << clsOther
	mNewline = 1 << clsNewline
	mSpace   = 1<<clsSpace | 1<<clsNewline
)

// run returns the end of the maximal run of characters from i whose class
// is in mask, stopping after max characters when max > 0. ASCII is
// classified by table without decoding.
func run(s string, i int, max int, mask uint8) int {
	for n := 0; i < len(s) && (max <= 0 || n < max); n++ {
		if b := s[i]; b < utf8.RuneSelf {
			if mask&(1<<asciiClass[b]) == 0 {
				break
			}
			i++
			continue
		}
		c, w := classAt(s, i)
		if mask&(1<<c) == 0 {
			break
		}
		i += w
	}
	return i
}

// contraction returns the length of the contraction suffix ('s, 't, 're,
// 've, 'm, 'll, 'd) at s[i:], where s[i-1] is an apostrophe, or 0. With fold
// the match is case-insensitive, including U+017F (long s), which
// Unicode case folding maps to s.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) {
		return 0
	}
	lower := func(b byte) byte {
		if fold && b >= 'A' && b <= 'Z' {
			return b + 'a' - 'A'
		}
		return b
	}
	c := lower(s[i])
	switch c {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v', 'l':
		if i+1 < len(s) {
			want := byte('e')
			if c == 'l' {
				want = 'l'
			}
			if lower(s[i+1]) == want {
				return 2
			}
		}
	case 0xC5: // U+017F is C5 BF in UTF-8.
		if fold && i+1 < len(s) && s[i+1] == 0xBF {
			return 2
		}
	}
	return 0
}

// next returns the end of the piece that starts at s[i], for i < len(s).
// Every position of the input matches one of the patterns' alternatives,
// so pieces are contiguous and cover the input.
func (p splitPattern) next(s string, i int) int {
	switch p {
	case patternGPT2:
		return nextGPT2(s, i)
	case patternLlama3:
		return nextLlama3(s, i, 3)
	case patternQwen2:
		return nextLlama3(s, i, 1)
	case patternMetaspace:
		return nextMetaspace(s, i)
	}
	return len(s)
}

// nextGPT2 implements patternGPT2 at s[i].
func nextGPT2(s string, i int) int {
	if s[i] == '\'' {
		if n := contraction(s, i+1, false); n > 0 {
			return i + 1 + n
		}
	}
	c0, w0 := classAt(s, i)
	// ' ?\p{L}+', ' ?\p{N}+', ' ?[^\s\p{L}\p{N}]+' in this order.
	for _, cls := range [...]uint8{clsLetter, clsNumber, clsOther} {
		if c0 == cls {
			return run(s, i, 0, 1<<cls)
		}
		if s[i] == ' ' && i+1 < len(s) {
			if c1, _ := classAt(s, i+1); c1 == cls {
				return run(s, i+1, 0, 1<<cls)
			}
		}
	}
	return whitespaceTail(s, i, w0)
}

// nextLlama3 implements patternLlama3 (maxDigits 3) and patternQwen2
// (maxDigits 1) at s[i].
func nextLlama3(s string, i int, maxDigits int) int {
	if s[i] == '\'' {
		if n := contraction(s, i+1, true); n > 0 {
			return i + 1 + n
		}
	}
	c0, w0 := classAt(s, i)
	// [^\r\n\p{L}\p{N}]?\p{L}+
	if c0 == clsLetter {
		return run(s, i, 0, mLetter)
	}
	if (c0 == clsOther || c0 == clsSpace) && i+w0 < len(s) {
		if c1, _ := classAt(s, i+w0); c1 == clsLetter {
			return run(s, i+w0, 0, mLetter)
		}
	}
	// \p{N}{1,maxDigits}
	if c0 == clsNumber {
		return run(s, i, maxDigits, mNumber)
	}
	// ' ?[^\s\p{L}\p{N}]+[\r\n]*'
	j := i
	if s[i] == ' ' {
		j++
	}
	if j < len(s) {
		if c, _ := classAt(s, j); c == clsOther {
			return run(s, run(s, j, 0, mOther), 0, mNewline)
		}
	}
	// \s*[\r\n]+ ends after the last newline of the whitespace run, if any.
	end := run(s, i, 0, mSpace)
	for k := end - 1; k >= i; k-- {
		if s[k] == '\r' || s[k] == '\n' {
			return k + 1
		}
	}
	return whitespaceTail(s, i, w0)
}

// whitespaceTail implements the shared `\s+(?!\S)|\s+` alternatives at s[i],
// where s[i] is whitespace of width w0: the whitespace run, less its last
// character when a non-space follows and the run is longer than one.
func whitespaceTail(s string, i, w0 int) int {
	end := run(s, i, 0, mSpace)
	if end == len(s) || end-i == w0 {
		return end
	}
	_, wl := utf8.DecodeLastRuneInString(s[i:end])
	return end - wl
}

// metaspace is SentencePiece's word-boundary mark, U+2581.
const metaspace = "\u2581"

// nextMetaspace implements patternMetaspace at s[i]: a run of "▁", then
// everything up to the next "▁".
func nextMetaspace(s string, i int) int {
	j := i
	for strings.HasPrefix(s[j:], metaspace) {
		j += len(metaspace)
	}
	if k := strings.Index(s[j:], metaspace); k >= 0 {
		return j + k
	}
	return len(s)
}
