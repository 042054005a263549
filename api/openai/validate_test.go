package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// refDuplicate is the naive reference of duplicateKey: encoding/json's
// tokens, a map of keys per object, the same order and depth.
func refDuplicate(t *testing.T, v []byte, depth int) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var walk func(depth int) (string, bool)
	walk = func(depth int) (string, bool) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("reference token of %q: %v", v, err)
		}
		path, found := "", false
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					t.Fatalf("reference key of %q: %v", v, err)
				}
				k := kt.(string)
				if !found && depth > 0 && seen[k] {
					path, found = "."+k, true
				}
				seen[k] = true
				if p, f := walk(depth - 1); !found && f && depth > 0 {
					path, found = "."+k+p, true
				}
			}
			dec.Token()
		case json.Delim('['):
			for n := 0; dec.More(); n++ {
				if p, f := walk(depth - 1); !found && f && depth > 0 {
					path, found = "["+strconv.Itoa(n)+"]"+p, true
				}
			}
			dec.Token()
		}
		return path, found
	}
	return walk(depth)
}

// TestDuplicateKey checks the duplicate-key scanner on named cases.
func TestDuplicateKey(t *testing.T) {
	cases := []struct {
		in    string
		depth int
		want  string
		dup   bool
	}{
		{`{"a":1,"b":2}`, 4, "", false},
		{`{"a":1,"a":2}`, 1, ".a", true},
		{`{"a":1,"\u0061":2}`, 1, ".a", true},
		{`[{"r":1},{"r":1,"c":2,"r":3}]`, 4, "[1].r", true},
		{`[{"c":[{"t":1,"t":2}]}]`, 4, "[0].c[0].t", true},
		{`[{"c":[{"t":{"x":1,"x":2}}]}]`, 4, "", false}, // deeper than the router reads
		{`{"a":{"b":1,"b":2}}`, 1, "", false},
		{`"s"`, 4, "", false},
	}
	for _, tc := range cases {
		got, dup := duplicateKey([]byte(tc.in), tc.depth)
		if got != tc.want || dup != tc.dup {
			t.Errorf("duplicateKey(%s, %d): got %q %v, want %q %v", tc.in, tc.depth, got, dup, tc.want, tc.dup)
		}
	}
}

// TestKeySetManyKeys checks the key set past its list, against a map.
func TestKeySetManyKeys(t *testing.T) {
	var s keySet
	ref := map[string]bool{}
	for i := range 200 {
		k := []byte(strconv.Itoa(i % 150))
		if got, want := s.add(k), ref[string(k)]; got != want {
			t.Fatalf("add(%s) #%d: got %v, want %v", k, i, got, want)
		}
		ref[string(k)] = true
	}
}

// FuzzDuplicateKey holds duplicateKey to the naive reference on valid
// JSON in valid UTF-8 (the parser refuses the rest before it looks).
func FuzzDuplicateKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `[{"r":1},{"r":1,"r":3}]`, `{"m":[{"c":[{"t":1,"t":2}]}]}`, `{"a\u0062":1,"ab":2}`, `[[[]]]`, `{}`} {
		f.Add([]byte(s), uint8(4))
	}
	f.Fuzz(func(t *testing.T, v []byte, depth uint8) {
		if !json.Valid(v) || !utf8.Valid(v) {
			return
		}
		d := int(depth % 6)
		got, dup := duplicateKey(v, d)
		want, wdup := refDuplicate(t, v, d)
		if got != want || dup != wdup {
			t.Fatalf("duplicateKey(%q, %d): got %q %v, reference %q %v", v, d, got, dup, want, wdup)
		}
	})
}

// TestUnpairedSurrogate checks the surrogate-escape check on named cases.
func TestUnpairedSurrogate(t *testing.T) {
	cases := map[string]bool{
		`"plain"`:              false,
		`"\u00e9\ud83d\ude00"`: false,
		`"\ud83d"`:             true,
		`"\ude00"`:             true,
		`"\ud83dx"`:            true,
		`"\ud83d\n"`:           true,
		`"\ud83d\ud83d\ude00"`: true,
		`"\\ud800"`:            false, // an escaped backslash, then text
		`["a","\ud800"]`:       true,
		`[{"role":"user","content":"\udbff\udfff"}]`: false,
	}
	for in, want := range cases {
		if got := unpairedSurrogate([]byte(in)); got != want {
			t.Errorf("unpairedSurrogate(%s): got %v, want %v", in, got, want)
		}
	}
	if _, err := ParseCompletion([]byte(`{"prompt":"a\ud800b"}`)); err == nil || !strings.Contains(err.Error(), "surrogate") {
		t.Errorf("ParseCompletion of a lone surrogate: got %v, want a surrogate error", err)
	}
	if _, err := ParseChat([]byte(`{"messages":[{"role":"user","content":"\udc00"}]}`)); err == nil || !strings.Contains(err.Error(), "surrogate") {
		t.Errorf("ParseChat of a lone surrogate: got %v, want a surrogate error", err)
	}
}
