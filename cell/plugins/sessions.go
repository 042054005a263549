package plugins

import (
	"sync"
	"time"
)

// Sessions remembers, for a bounded time, which pod served each session
// last. The cell records a session after it dispatched a request.
type Sessions struct {
	mu   sync.Mutex
	ttl  time.Duration
	max  int
	now  func() time.Time
	last map[string]sessionEntry
}

type sessionEntry struct {
	pod  string
	seen time.Time
}

// NewSessions keeps at most max sessions for ttl each.
func NewSessions(ttl time.Duration, max int, now func() time.Time) *Sessions {
	if now == nil {
		now = time.Now
	}
	return &Sessions{ttl: ttl, max: max, now: now, last: map[string]sessionEntry{}}
}

// Record notes that session went to pod.
func (s *Sessions) Record(session, pod string) {
	if session == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if len(s.last) >= s.max {
		for k, e := range s.last { // evict expired, else an arbitrary one
			if now.Sub(e.seen) > s.ttl || len(s.last) >= s.max {
				delete(s.last, k)
			}
			if len(s.last) < s.max {
				break
			}
		}
	}
	s.last[session] = sessionEntry{pod: pod, seen: now}
}

// Pod returns the pod session last went to, if recent.
func (s *Sessions) Pod(session string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.last[session]
	if !ok || s.now().Sub(e.seen) > s.ttl {
		return "", false
	}
	return e.pod, true
}
