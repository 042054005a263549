package edge

import (
	"context"
	"errors"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"
)

// ErrBudget: the process holds its most buffered request bytes
// (Limits.MaxBufferedBytes): HTTP 503 with Retry-After.
var ErrBudget = errors.New("edge: request body budget spent")

// budgetGrain is the most a body of unknown length (chunked) reserves at
// a time when it outgrows its reservation: what the reader asks for, up to
// this.
const budgetGrain = 64 << 10

// Budget bounds the request body bytes a process holds at once, all
// requests together. Both daemons read a data-plane body whole before
// they parse it (and hash or tokenize its prompt), so without a bound a
// few clients sending large bodies at once can take the process's memory.
// A request reserves its body's bytes before the handler reads them (the
// announced Content-Length, or, for a chunked body, what each read asks
// for, up to budgetGrain at a time) and releases them when its handler
// returns. A nil *Budget is unlimited. Safe for concurrent use; it never
// blocks.
//
// A flood leaves the process holding the memory its bodies took: the Go
// runtime keeps freed heap for reuse and returns it to the operating system
// slowly, or not at all until the next collection. So when the bytes
// reserved fall to an eighth of the budget after having reached half of it
// since the last time (a flood, not steady traffic), Trim, run by the
// daemon, collects and returns the free memory (debug.FreeOSMemory), at
// most once per TrimInterval.
type Budget struct {
	max  int64
	used atomic.Int64
	// peak is the most reserved since the last trim was signalled.
	peak atomic.Int64
	// trim is signalled (never blocking) when a flood has drained.
	trim chan struct{}
}

// TrimInterval is the least time between two returns of memory to the
// operating system after floods.
const TrimInterval = 10 * time.Second

// NewBudget returns a budget of max bytes; max <= 0 returns nil
// (unlimited).
func NewBudget(max int64) *Budget {
	if max <= 0 {
		return nil
	}
	return &Budget{max: max, trim: make(chan struct{}, 1)}
}

// Trim returns the process's free memory to the operating system (free,
// nil meaning debug.FreeOSMemory) each time a flood of bodies has drained,
// at most once per TrimInterval, until ctx ends. The daemon that owns the
// budget runs it in one goroutine; a nil budget returns at once.
func (b *Budget) Trim(ctx context.Context, free func()) {
	if b == nil {
		return
	}
	if free == nil {
		free = debug.FreeOSMemory
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-b.trim:
		}
		free()
		select {
		case <-ctx.Done():
			return
		case <-time.After(TrimInterval):
		}
	}
}

// TryAcquire reserves n bytes and reports whether they fit; a refused
// request reserves nothing. n <= 0 always fits.
func (b *Budget) TryAcquire(n int64) bool {
	if b == nil || n <= 0 {
		return true
	}
	for {
		u := b.used.Load()
		if n > b.max-u {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			for p := b.peak.Load(); u+n > p && !b.peak.CompareAndSwap(p, u+n); p = b.peak.Load() {
			}
			return true
		}
	}
}

// Release returns n bytes TryAcquire reserved.
func (b *Budget) Release(n int64) {
	if b == nil || n <= 0 {
		return
	}
	u := b.used.Add(-n)
	if u < 0 {
		panic("edge: budget released more than it reserved")
	}
	if u <= b.max/8 {
		if p := b.peak.Load(); p >= b.max/2 && b.peak.CompareAndSwap(p, u) {
			select {
			case b.trim <- struct{}{}:
			default:
			}
		}
	}
}

// Used returns the bytes reserved now.
func (b *Budget) Used() int64 {
	if b == nil {
		return 0
	}
	return b.used.Load()
}

// Max returns the budget's size, 0 for unlimited.
func (b *Budget) Max() int64 {
	if b == nil {
		return 0
	}
	return b.max
}

// hold reserves r's body before the handler reads it: the announced length
// at once, a body of unknown length as it arrives. A refused body is
// drained, never kept. It returns the request and writer the handler gets
// and a release to call once the handler returned; a refusal (ErrBudget)
// is counted and answered by the caller.
func (b *Budget) hold(w http.ResponseWriter, r *http.Request, m *Metrics) (http.ResponseWriter, *http.Request, func(), error) {
	if b == nil || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return w, r, func() {}, nil
	}
	if r.ContentLength > 0 {
		n := r.ContentLength
		if !b.TryAcquire(n) {
			m.Hit(LimitBufferBudget)
			if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
				// A client waiting for 100 Continue sends no body: it
				// reads the refusal as it is.
				drain(r.Body)
			}
			return w, r, nil, ErrBudget
		}
		m.bufferedAdd(n)
		return w, r, func() { b.Release(n); m.bufferedAdd(-n) }, nil
	}
	gw := &guardedWriter{ResponseWriter: w}
	body := &budgetBody{rc: r.Body, b: b, m: m, w: gw}
	r2 := r.Clone(r.Context())
	r2.Body = body
	return gw, r2, func() { b.Release(body.reserved); m.bufferedAdd(-body.reserved) }, nil
}

// budgetBody reserves a chunked body's bytes as they arrive. Past the
// budget it answers 503 itself (through the guarded writer, which then
// drops what the handler writes) and fails the read with ErrBudget.
type budgetBody struct {
	rc       io.ReadCloser
	b        *Budget
	m        *Metrics
	w        *guardedWriter
	read     int64 // bytes handed to the reader
	reserved int64 // bytes reserved; read <= reserved
	refused  bool
}

func (bb *budgetBody) Read(p []byte) (int, error) {
	if bb.refused {
		return 0, ErrBudget
	}
	if len(p) == 0 {
		return bb.rc.Read(p)
	}
	if bb.read == bb.reserved {
		grow := min(int64(len(p)), budgetGrain)
		if !bb.b.TryAcquire(grow) {
			bb.refused = true
			drain(bb.rc)
			bb.m.Hit(LimitBufferBudget)
			WriteHTTP(bb.w.ResponseWriter, ErrBudget)
			bb.w.refuse()
			return 0, ErrBudget
		}
		bb.reserved += grow
		bb.m.bufferedAdd(grow)
	}
	if room := bb.reserved - bb.read; int64(len(p)) > room {
		p = p[:room]
	}
	n, err := bb.rc.Read(p)
	bb.read += int64(n)
	return n, err
}

func (bb *budgetBody) Close() error { return bb.rc.Close() }

// drain reads what is left of a refused body without keeping it (bounded
// by the server's body size and time limits, which the body enforces), so
// that the client, still sending, reads the refusal instead of a reset
// connection: a server that closes a connection with unread bytes resets
// it, and a client that sent "Connection: close", or a body too large for
// net/http to discard after the handler, would see only that.
func drain(body io.Reader) {
	_, _ = io.Copy(io.Discard, body)
}
