package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/cellrouter/cellrouter/api/openai"
)

// maxUsageBytes bounds a captured usage object; a larger one is not usage
// as OpenAI servers send it and is skipped.
const maxUsageBytes = 4 << 10

// usageKey is the key the scanner looks for, quotes included.
const usageKey = `"usage"`

// The states of the usage scanner.
const (
	usSearch  = iota // looking for "usage"
	usKey            // after "usage": expecting ':'
	usColon          // after ':': expecting '{'
	usCapture        // inside the usage object
)

// usageScanner finds the last "usage": {...} object in a byte stream fed to
// it in arbitrary pieces: a JSON response body, or server-sent events whose
// last chunk carries usage. It keeps no more than the usage object itself,
// so relaying a stream through it buffers nothing. A usage of null is
// skipped. The zero value is ready; a nil scanner ignores everything.
type usageScanner struct {
	state    int
	matched  int // bytes of usageKey matched in usSearch
	depth    int
	inString bool
	escaped  bool
	obj      []byte
	last     openai.Usage
	found    bool
}

// Write scans p.
func (s *usageScanner) Write(p []byte) {
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch s.state {
		case usSearch:
			if s.matched == 0 {
				j := bytes.IndexByte(p[i:], '"')
				if j < 0 {
					return
				}
				i += j
				s.matched = 1
				continue
			}
			switch {
			case c == usageKey[s.matched]:
				s.matched++
				if s.matched == len(usageKey) {
					s.matched = 0
					s.state = usKey
				}
			case c == '"':
				s.matched = 1
			default:
				s.matched = 0
			}
		case usKey:
			switch c {
			case ' ', '\t', '\r', '\n':
			case ':':
				s.state = usColon
			default:
				s.reset(p, &i)
			}
		case usColon:
			switch c {
			case ' ', '\t', '\r', '\n':
			case '{':
				s.state = usCapture
				s.obj = append(s.obj[:0], '{')
				s.depth, s.inString, s.escaped = 1, false, false
			default:
				s.reset(p, &i)
			}
		case usCapture:
			s.capture(c)
		}
	}
}

// reset goes back to searching and rescans the current byte, which may
// start the key.
func (s *usageScanner) reset(p []byte, i *int) {
	s.state, s.matched = usSearch, 0
	*i-- // the loop's i++ brings it back to the byte
}

// capture adds c to the usage object being captured.
func (s *usageScanner) capture(c byte) {
	if len(s.obj) >= maxUsageBytes {
		s.state, s.matched = usSearch, 0
		return
	}
	s.obj = append(s.obj, c)
	switch {
	case s.escaped:
		s.escaped = false
	case s.inString:
		switch c {
		case '\\':
			s.escaped = true
		case '"':
			s.inString = false
		}
	case c == '"':
		s.inString = true
	case c == '{':
		s.depth++
	case c == '}':
		s.depth--
		if s.depth == 0 {
			var u openai.Usage
			if json.Unmarshal(s.obj, &u) == nil {
				s.last, s.found = u, true
			}
			s.state, s.matched = usSearch, 0
		}
	}
}

// usage returns the last usage seen, nil when none was.
func (s *usageScanner) usage() *Usage {
	if s == nil || !s.found {
		return nil
	}
	return &Usage{
		PromptTokens:     s.last.PromptTokens,
		CompletionTokens: s.last.CompletionTokens,
		CachedTokens:     s.last.Cached(),
	}
}
