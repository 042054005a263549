package auth

import (
	"fmt"
	"sort"
	"strings"
)

// MaxPodPatterns bounds the pod patterns of one key or certificate.
const MaxPodPatterns = 1024

// MaxPodPatternLen bounds one pod pattern, in bytes.
const MaxPodPatternLen = 253

// PodSet is the pods a principal may publish events for: exact pod ids
// and id prefixes (a pattern ending in '*'; "*" alone is any pod). A nil
// *PodSet is unrestricted: any pod the cell knows. A PodSet is immutable
// and safe for concurrent use.
type PodSet struct {
	exact    map[string]bool
	prefixes []string
	any      bool
}

// ParsePods parses pod patterns: each 1 to MaxPodPatternLen printable
// ASCII characters without spaces, with at most one '*', as the last
// character. No patterns give nil (unrestricted). The error names the
// pattern at fault ("pods[2] = ...").
func ParsePods(patterns []string) (*PodSet, error) {
	if len(patterns) == 0 {
		return nil, nil
	}
	if len(patterns) > MaxPodPatterns {
		return nil, fmt.Errorf("pods: %d patterns is over the limit of %d", len(patterns), MaxPodPatterns)
	}
	s := &PodSet{exact: make(map[string]bool)}
	for i, p := range patterns {
		if err := checkPodPattern(p); err != nil {
			return nil, fmt.Errorf("pods[%d] = %q: %v", i, p, err)
		}
		switch {
		case p == "*":
			s.any = true
		case strings.HasSuffix(p, "*"):
			s.prefixes = append(s.prefixes, p[:len(p)-1])
		default:
			s.exact[p] = true
		}
	}
	return s, nil
}

// checkPodPattern checks one pattern's syntax.
func checkPodPattern(p string) error {
	if p == "" || len(p) > MaxPodPatternLen {
		return fmt.Errorf("want 1 to %d characters", MaxPodPatternLen)
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c <= ' ' || c >= 0x7f:
			return fmt.Errorf("want printable ASCII without spaces")
		case c == '*' && i != len(p)-1:
			return fmt.Errorf("'*' may only end a pattern (a prefix)")
		}
	}
	return nil
}

// Match reports whether pod is in the set; a nil set holds every pod.
func (s *PodSet) Match(pod string) bool {
	if s == nil || s.any {
		return true
	}
	if s.exact[pod] {
		return true
	}
	for _, p := range s.prefixes {
		if strings.HasPrefix(pod, p) {
			return true
		}
	}
	return false
}

// Empty reports whether the set holds no pod at all (a restriction that
// allows nothing).
func (s *PodSet) Empty() bool {
	return s != nil && !s.any && len(s.exact) == 0 && len(s.prefixes) == 0
}

// String lists the patterns, "*" for an unrestricted set.
func (s *PodSet) String() string {
	if s == nil || s.any {
		return "*"
	}
	var parts []string
	for p := range s.exact {
		parts = append(parts, p)
	}
	for _, p := range s.prefixes {
		parts = append(parts, p+"*")
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
