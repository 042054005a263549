package openai

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// What the router checks of a request, field by field (see the package
// documentation, "Validation"): the members of the top-level object, and
// of the objects inside messages and stream_options, appear once each;
// the body is valid UTF-8, blamed on the top-level member that is not; and
// the well-known sampling fields below have the type and range OpenAI and
// vLLM give them.

// checkField checks one well-known field the router does not read.
type checkField func(name string, val []byte) error

// knownField is a field's name (so a check names it without building a
// string from the key) and its check.
type knownField struct {
	name  string
	check checkField
}

// knownFields are the sampling fields checked for type and range. They
// are checked on the value as sent: a null is allowed (the engine's
// default), anything else must have the field's type.
var knownFields = func() map[string]knownField {
	m := map[string]checkField{
		"temperature":       number(0, math.Inf(1)),
		"top_p":             number(0, 1),
		"presence_penalty":  number(-2, 2),
		"frequency_penalty": number(-2, 2),
		"n":                 integer(1, math.MaxInt32),
		"seed":              integer(math.MinInt64, math.MaxInt64),
		"stop":              stop,
	}
	out := make(map[string]knownField, len(m))
	for name, check := range m {
		out[name] = knownField{name, check}
	}
	return out
}()

// jsonNumber parses val as a JSON number: json.Valid's grammar (no Inf,
// NaN, hex or leading +), then its value.
func jsonNumber(val []byte) (float64, bool) {
	if len(val) == 0 || (val[0] != '-' && (val[0] < '0' || val[0] > '9')) || validValue(val) != nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(val), 64)
	return f, err == nil
}

// number accepts null or a JSON number from lo to hi.
func number(lo, hi float64) checkField {
	return func(name string, val []byte) error {
		if isAbsent(val) {
			return nil
		}
		f, ok := jsonNumber(val)
		if !ok {
			return typeError(name, val, "must be a number")
		}
		if f < lo || f > hi {
			return invalid(name, "must be "+rangeText(lo, hi)+", got "+string(val))
		}
		return nil
	}
}

// integer accepts null or a JSON integer from lo to hi.
func integer(lo, hi int64) checkField {
	return func(name string, val []byte) error {
		if isAbsent(val) {
			return nil
		}
		if _, ok := jsonNumber(val); !ok {
			return typeError(name, val, "must be an integer")
		}
		v, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return invalid(name, "must be an integer, got "+string(val))
		}
		if v < lo || v > hi {
			return invalid(name, "must be "+rangeText(float64(lo), float64(hi))+", got "+string(val))
		}
		return nil
	}
}

// stop accepts null, a string or an array of strings.
func stop(name string, val []byte) error {
	if isAbsent(val) {
		return nil
	}
	if err := validValue(val); err != nil {
		return err
	}
	switch val[0] {
	case '"':
		return nil
	case '[':
		ok := true
		eachElement(val, func(e []byte) {
			if len(e) == 0 || e[0] != '"' {
				ok = false
			}
		})
		if ok {
			return nil
		}
	}
	return invalid(name, "must be a string, an array of strings or null")
}

// typeError is the error of a value of the wrong type; invalid JSON is the
// body's fault, not the field's.
func typeError(name string, val []byte, msg string) error {
	if err := validValue(val); err != nil {
		return err
	}
	return invalid(name, msg)
}

// rangeText says a range in words.
func rangeText(lo, hi float64) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	switch {
	case math.IsInf(hi, 1) || hi >= math.MaxInt64:
		return "at least " + f(lo)
	case hi >= math.MaxInt32 && lo >= 0:
		return "at least " + f(lo)
	}
	return "from " + f(lo) + " to " + f(hi)
}

// eachElement calls fn with every element of the valid JSON array arr.
func eachElement(arr []byte, fn func(e []byte)) {
	i := skipSpace(arr, 1)
	if i >= len(arr) || arr[i] == ']' {
		return
	}
	for i < len(arr) {
		end := skipValueChecked(arr, i)
		if end < 0 {
			return
		}
		fn(arr[i:end])
		i = skipSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return
		}
		i = skipSpace(arr, i+1)
	}
}

// keySet finds a repeated key among an object's keys: a short array
// scanned for the few keys of a request (no allocation), a map past that,
// so a body of many keys costs linear time.
type keySet struct {
	list [16][]byte
	n    int
	m    map[string]struct{}
}

// add adds k and reports whether it was there already. k must not change
// while the set is in use.
func (s *keySet) add(k []byte) bool {
	if s.m != nil {
		if _, ok := s.m[string(k)]; ok {
			return true
		}
		s.m[string(k)] = struct{}{}
		return false
	}
	for _, x := range s.list[:s.n] {
		if bytes.Equal(x, k) {
			return true
		}
	}
	if s.n < len(s.list) {
		s.list[s.n] = k
		s.n++
		return false
	}
	s.m = make(map[string]struct{}, 4*len(s.list))
	for _, x := range s.list {
		s.m[string(x)] = struct{}{}
	}
	s.m[string(k)] = struct{}{}
	return false
}

// duplicateKey returns the path of the first key given twice in one
// object within the valid JSON value v (as ".key" or "[2].key", relative
// to v), looking at most depth levels of objects and arrays deep (the
// router reads no deeper); ok is false if there is none. It allocates
// only for the path it returns.
func duplicateKey(v []byte, depth int) (path string, ok bool) {
	i := skipSpace(v, 0)
	if depth <= 0 || i >= len(v) {
		return "", false
	}
	switch v[i] {
	case '{':
		var keys keySet
		_ = walkObject(v[i:], func(k, val []byte) error {
			if keys.add(k) {
				path, ok = "."+string(k), true
				return errStop
			}
			if d, found := duplicateKey(val, depth-1); found {
				path, ok = "."+string(k)+d, true
				return errStop
			}
			return nil
		})
	case '[':
		n := 0
		eachElement(v[i:], func(e []byte) {
			if !ok {
				if d, found := duplicateKey(e, depth-1); found {
					path, ok = "["+strconv.Itoa(n)+"]"+d, true
				}
			}
			n++
		})
	}
	return path, ok
}

// errStop ends a walk early; it never reaches a caller.
var errStop = invalid("", "stop")

// utf8Error blames invalid UTF-8 on the member that holds it.
func utf8Error(key, val []byte) error {
	if !utf8.Valid(key) {
		return invalid("", "the body must be valid UTF-8")
	}
	if !utf8.Valid(val) {
		if err := validValue(val); err != nil {
			return err
		}
		return invalid(string(key), "must be valid UTF-8")
	}
	return nil
}

// unpairedSurrogate reports whether the JSON text v (strings checked by
// scanString) holds a \u escape of a UTF-16 surrogate that is not half of
// a pair. encoding/json decodes one as U+FFFD while Python's json keeps
// it, so the router would hash a prompt the engine does not have (and
// the engine's tokenizer refuses it anyway).
func unpairedSurrogate(v []byte) bool {
	if bytes.Index(v, []byte(`\u`)) < 0 {
		return false
	}
	highOpen := false // the previous escape was a high surrogate
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			if highOpen {
				return true
			}
			continue
		}
		if i+1 < len(v) && v[i+1] == 'u' && i+6 <= len(v) {
			r, err := strconv.ParseUint(string(v[i+2:i+6]), 16, 32)
			if err != nil {
				return false // not a string's escape; scanString had the say
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if highOpen {
					return true
				}
				highOpen = true
			case r >= 0xDC00 && r <= 0xDFFF:
				if !highOpen {
					return true
				}
				highOpen = false
			default:
				if highOpen {
					return true
				}
			}
			i += 5
			continue
		}
		if highOpen {
			return true
		}
		i++ // the escaped byte
	}
	return highOpen
}
