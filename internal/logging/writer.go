package logging

import (
	"net/http"
	"time"
)

// statusWriter is a sampled request's response writer: it passes
// everything on and records the status, the time of the first byte and
// the bytes written.
type statusWriter struct {
	http.ResponseWriter
	status int
	first  time.Time
	bytes  int64
}

// WriteHeader records the first status written.
func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

// Write records the first byte's time and counts the bytes.
func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.first.IsZero() && len(p) > 0 {
		s.first = time.Now()
	}
	n, err := s.ResponseWriter.Write(p)
	s.bytes += int64(n)
	return n, err
}

// Flush implements http.Flusher: streamed responses pass at once.
func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
