package edge

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// exempt are the paths the stream limit does not count: health checks and
// metrics must answer while a server is full, or it would look dead.
var exempt = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// Harden returns h behind the per-request limits of l: headers larger than
// MaxHeaderBytes (431), bodies announced or found larger than MaxBodyBytes
// (413), bodies that take longer than BodyTimeout (408; the connection is
// closed), and more than MaxConcurrentStreams requests at once (503 with
// Retry-After). Every hit is counted in m.
func Harden(l Limits, m *Metrics, h http.Handler) http.Handler {
	var inflight atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if headerBytes(r) > l.MaxHeaderBytes {
			m.Hit(LimitHeaderSize)
			w.Header().Set("Connection", "close")
			WriteHTTP(w, ErrHeaderTooLarge)
			return
		}
		if !exempt[r.URL.Path] {
			if inflight.Add(1) > int64(l.MaxConcurrentStreams) {
				inflight.Add(-1)
				m.Hit(LimitStreams)
				WriteHTTP(w, ErrOverloaded)
				return
			}
			defer inflight.Add(-1)
		}
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > l.MaxBodyBytes {
			m.Hit(LimitBodySize)
			w.Header().Set("Connection", "close")
			WriteHTTP(w, ErrBodyTooLarge)
			return
		}
		gw := &guardedWriter{ResponseWriter: w}
		rc := http.NewResponseController(w)
		body := &slowBody{rc: r.Body, left: l.MaxBodyBytes, limit: l.MaxBodyBytes, m: m, w: gw, ctl: rc}
		// The deadline ends when the body has been read to its end
		// (slowBody lifts it), so it never bounds a streamed response. A
		// body the handler left unread keeps it, so the server's discard
		// of the rest is bounded too. A writer that cannot set one (a test
		// recorder) serves without it.
		body.deadline = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout)) == nil
		r.Body = body
		h.ServeHTTP(gw, r)
	})
}

// headerBytes approximates the size of a request's head as the server read
// it: the request line and every header line.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + len(r.Proto) + 4 + len(r.Host) + 8
	for k, vv := range r.Header {
		for _, v := range vv {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// slowBody is a request body bounded in size and time. When the deadline
// passes it answers 408 itself (through the guarded writer, which then
// drops what the handler writes) and returns ErrBodyTimeout; past the size
// it returns an *http.MaxBytesError, which the handlers answer with 413.
type slowBody struct {
	rc       io.ReadCloser
	left     int64
	limit    int64
	m        *Metrics
	w        *guardedWriter
	ctl      *http.ResponseController
	deadline bool // a read deadline is set
	done     bool // the body ended (EOF or error)
}

func (b *slowBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	if b.left <= 0 {
		// One more byte tells a body of exactly the limit from a longer one.
		var one [1]byte
		n, err := b.rc.Read(one[:])
		if n > 0 {
			b.m.Hit(LimitBodySize)
			b.done = true
			return 0, &http.MaxBytesError{Limit: b.limit}
		}
		return 0, b.fail(err)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, b.fail(err)
}

// fail handles a read error: the end of the body lifts the deadline, a
// timeout is answered with 408. After any other error the deadline stays,
// bounding what the server still reads of a body it will not use.
func (b *slowBody) fail(err error) error {
	if err == nil {
		return nil
	}
	b.done = true
	if err == io.EOF {
		b.lift()
		return err
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		b.m.Hit(LimitBodyTimeout)
		b.w.Header().Set("Connection", "close")
		WriteHTTP(b.w.ResponseWriter, ErrBodyTimeout)
		b.w.refuse()
		return ErrBodyTimeout
	}
	return err
}

// lift removes the deadline at the body's end: from there on the
// connection's reads belong to the server (it watches for the client going
// away), which a lingering deadline would cancel.
func (b *slowBody) lift() {
	if b.deadline {
		b.deadline = false
		_ = b.ctl.SetReadDeadline(time.Time{})
	}
}

func (b *slowBody) Close() error { return b.rc.Close() }

// guardedWriter passes writes through until refuse, after which the
// handler's writes are dropped (the answer was already written).
type guardedWriter struct {
	http.ResponseWriter
	refused bool
}

func (g *guardedWriter) refuse() { g.refused = true }

func (g *guardedWriter) WriteHeader(code int) {
	if !g.refused {
		g.ResponseWriter.WriteHeader(code)
	}
}

func (g *guardedWriter) Write(p []byte) (int, error) {
	if g.refused {
		return 0, ErrBodyTimeout
	}
	return g.ResponseWriter.Write(p)
}

// Flush implements http.Flusher: streamed responses pass at once.
func (g *guardedWriter) Flush() {
	if f, ok := g.ResponseWriter.(http.Flusher); ok && !g.refused {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the server's writer.
func (g *guardedWriter) Unwrap() http.ResponseWriter { return g.ResponseWriter }
