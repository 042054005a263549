package openai

import (
	"bytes"
	"encoding/json"
)

// errSyntax is the message of every JSON syntax error, so callers and tests
// can tell syntax from type errors.
const errSyntax = "body is not valid JSON"

// walkObject calls fn with the key and the raw value of every top-level
// member of the JSON object body, in order. It checks the object's own
// syntax (braces, key strings, colons, commas, nothing after the end) but
// not the values: fn must validate each value it gets (decode it, or
// json.Valid it), which together makes body valid JSON. Each value is thus
// scanned about once, where json.Unmarshal scans it twice or more.
func walkObject(body []byte, fn func(key, val []byte) error) error {
	i := skipSpace(body, 0)
	if i >= len(body) {
		return invalid("", "request body is empty")
	}
	if body[i] != '{' {
		return invalid("", "request body must be a JSON object")
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return endOfBody(body, i+1)
	}
	for {
		if i >= len(body) || body[i] != '"' {
			return syntaxAt(i)
		}
		kend := scanString(body, i)
		if kend < 0 {
			return syntaxAt(i)
		}
		key := body[i+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var k string
			if err := json.Unmarshal(body[i:kend], &k); err != nil {
				return syntaxAt(i)
			}
			key = []byte(k)
		}
		i = skipSpace(body, kend)
		if i >= len(body) || body[i] != ':' {
			return syntaxAt(i)
		}
		i = skipSpace(body, i+1)
		vend := skipValueChecked(body, i)
		if vend < 0 {
			return syntaxAt(i)
		}
		if err := fn(key, body[i:vend]); err != nil {
			return err
		}
		i = skipSpace(body, vend)
		if i >= len(body) {
			return syntaxAt(i)
		}
		switch body[i] {
		case ',':
			i = skipSpace(body, i+1)
		case '}':
			return endOfBody(body, i+1)
		default:
			return syntaxAt(i)
		}
	}
}

// endOfBody checks that only whitespace follows the object.
func endOfBody(body []byte, i int) error {
	if skipSpace(body, i) != len(body) {
		return syntaxAt(i)
	}
	return nil
}

// syntaxAt returns the syntax error at offset i.
func syntaxAt(i int) *RequestError {
	return invalid("", errSyntax+" (at offset "+itoa(i)+")")
}

// itoa is strconv.Itoa for non-negative offsets without the import.
func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// scanString returns the index after the JSON string starting at
// b[i] == '"', checking its escapes and that it holds no control
// characters, or -1 when it is malformed or unterminated.
func scanString(b []byte, i int) int {
	i++
	for i < len(b) {
		// Jump to the next byte that needs a look.
		j := i
		for j < len(b) && b[j] != '"' && b[j] != '\\' && b[j] >= 0x20 {
			j++
		}
		if j >= len(b) {
			return -1
		}
		switch c := b[j]; {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		}
		// A backslash.
		if j+1 >= len(b) {
			return -1
		}
		switch b[j+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i = j + 2
		case 'u':
			if j+6 > len(b) || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
				return -1
			}
			i = j + 6
		default:
			return -1
		}
	}
	return -1
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// skipValueChecked returns the index after the value starting at b[i], or
// -1 when its extent cannot be found (unterminated strings or brackets).
// Strings inside are fully checked; everything else is left to the value's
// own validation.
func skipValueChecked(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return scanString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				if i = scanString(b, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case ',', '}', ']', ':':
		return -1
	default:
		start := i
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				if i == start {
					return -1
				}
				return i
			}
			i++
		}
		return i
	}
}
