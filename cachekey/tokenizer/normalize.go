package tokenizer

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normStep is one normalizer of tokenizer.json that this package supports:
// a Unicode normalization form, Prepend, or Replace of a literal string.
type normStep struct {
	form    norm.Form
	isForm  bool
	prepend string
	from    string
	to      string
}

// normalizer is a sequence of steps applied in order. The empty sequence
// leaves text unchanged.
type normalizer []normStep

// apply returns s normalized. It does not allocate when no step changes s.
func (n normalizer) apply(s string) string {
	for _, st := range n {
		switch {
		case st.isForm:
			if !isASCII(s) && !st.form.IsNormalString(s) {
				s = st.form.String(s)
			}
		case st.prepend != "":
			// Prepend leaves empty text empty, as in the tokenizers library.
			if s != "" {
				s = st.prepend + s
			}
		case st.from != "":
			s = strings.ReplaceAll(s, st.from, st.to)
		}
	}
	return s
}

// isASCII reports whether s has only ASCII bytes; ASCII text is invariant
// under every Unicode normalization form.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// parseNormalizer turns tokenizer.json's normalizer into steps.
func parseNormalizer(c *component) (normalizer, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "Sequence":
		var out normalizer
		for i := range c.Normalizers {
			sub, err := parseNormalizer(&c.Normalizers[i])
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		}
		return out, nil
	case "NFC":
		return normalizer{{form: norm.NFC, isForm: true}}, nil
	case "NFD":
		return normalizer{{form: norm.NFD, isForm: true}}, nil
	case "NFKC":
		return normalizer{{form: norm.NFKC, isForm: true}}, nil
	case "NFKD":
		return normalizer{{form: norm.NFKD, isForm: true}}, nil
	case "Prepend":
		return normalizer{{prepend: c.Prepend}}, nil
	case "Replace":
		if c.Pattern == nil || c.Pattern.String == nil {
			return nil, unsupported("normalizer", "Replace with a regex pattern")
		}
		if *c.Pattern.String == "" {
			return nil, invalid("normalizer Replace with an empty pattern")
		}
		return normalizer{{from: *c.Pattern.String, to: c.Content}}, nil
	}
	return nil, unsupported("normalizer", c.Type)
}
