package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json's added_tokens that text can
// contain literally, such as <|im_start|> or <|eot_id|>.
type addedToken struct {
	content string
	id      uint32
	lstrip  bool
	rstrip  bool
}

// addedMatcher finds added tokens in text, leftmost first and, among the
// tokens that start at the same position, longest first, as the
// `tokenizers` library's Aho-Corasick matcher does.
type addedMatcher struct {
	// first marks the bytes that start some token, to skip the rest fast.
	first [256]bool
	// byFirst lists the tokens starting with each byte, longest first.
	byFirst [256][]addedToken
	n       int
	// only is the first byte of every token when they all share one (as
	// '<' in <|im_start|> and <s>), so find can skip with IndexByte; -1
	// otherwise.
	only int
}

// newAddedMatcher builds a matcher over toks; empty contents are ignored.
func newAddedMatcher(toks []addedToken) *addedMatcher {
	m := &addedMatcher{only: -1}
	for _, t := range toks {
		if t.content == "" {
			continue
		}
		b := t.content[0]
		m.first[b] = true
		m.byFirst[b] = append(m.byFirst[b], t)
		m.n++
	}
	for b := range m.byFirst {
		if m.first[b] {
			if m.only == -1 {
				m.only = b
			} else {
				m.only = -2
			}
		}
		l := m.byFirst[b]
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].content) > len(l[j].content) })
	}
	if m.only < 0 {
		m.only = -1
	}
	return m
}

// find returns the first added token in s at or after from: the span
// [start, end) it occupies, including whitespace absorbed by lstrip and
// rstrip, and its id. ok is false when there is none.
func (m *addedMatcher) find(s string, from int) (start, end int, id uint32, ok bool) {
	if m == nil || m.n == 0 {
		return 0, 0, 0, false
	}
	for i := from; i < len(s); i++ {
		if m.only >= 0 {
			k := strings.IndexByte(s[i:], byte(m.only))
			if k < 0 {
				break
			}
			i += k
		} else if !m.first[s[i]] {
			continue
		}
		for _, t := range m.byFirst[s[i]] {
			if !strings.HasPrefix(s[i:], t.content) {
				continue
			}
			start, end = i, i+len(t.content)
			if t.lstrip {
				for start > from {
					r, w := utf8.DecodeLastRuneInString(s[from:start])
					if !unicode.IsSpace(r) {
						break
					}
					start -= w
				}
			}
			if t.rstrip {
				for end < len(s) {
					r, w := utf8.DecodeRuneInString(s[end:])
					if !unicode.IsSpace(r) {
						break
					}
					end += w
				}
			}
			return start, end, t.id, true
		}
	}
	return 0, 0, 0, false
}
