package auth

import (
	"math"
	"sync"
	"time"
)

// ConcurrencyRetryAfter is the Retry-After of a request refused for the
// tenant's concurrency: when a slot frees cannot be known, so the client is
// asked to come back soon.
const ConcurrencyRetryAfter = time.Second

// Limiter enforces tenants' Limits: a token bucket for the request rate
// (RequestsPerSecond, refilled continuously, Burst deep) and a count of
// requests in flight (MaxConcurrent). It is the pure core of rate
// limiting: time comes from the caller, nothing runs in the background, and
// its state is one small record per tenant. Safe for concurrent use.
type Limiter struct {
	mu sync.Mutex
	m  map[string]*bucket
	// defConc is the MaxConcurrent of a tenant whose Limits leave it 0.
	defConc int
}

// bucket is one tenant's state.
type bucket struct {
	tokens   float64   // available requests, at most Burst
	last     time.Time // when tokens was last refilled
	started  bool      // tokens and last are set
	inflight int
}

// Ticket is an admitted request's hold on its tenant's concurrency; the
// zero Ticket holds nothing.
type Ticket struct {
	tenant string
	held   bool
}

// NewLimiter returns a limiter with no tenant seen yet and no default
// concurrency.
func NewLimiter() *Limiter { return &Limiter{m: map[string]*bucket{}} }

// SetDefaultConcurrent makes n the in-flight bound of tenants whose
// Limits.MaxConcurrent is 0 (their key file entry sets none); n <= 0 leaves
// them unlimited. Call it before the limiter is used.
func (l *Limiter) SetDefaultConcurrent(n int) { l.defConc = max(n, 0) }

// concurrency is the in-flight bound of lim, 0 for unlimited.
func (l *Limiter) concurrency(lim Limits) int {
	switch {
	case lim.MaxConcurrent > 0:
		return lim.MaxConcurrent
	case lim.MaxConcurrent == 0:
		return l.defConc
	}
	return 0
}

// Acquire admits one request of t at time now, or refuses it with an
// *Error wrapping ErrConcurrency (t has MaxConcurrent requests in flight)
// or ErrRateLimited (its bucket is empty), whose RetryAfter says when to
// come back: for the rate, when the bucket holds a whole token again,
// rounded up to a whole second as Retry-After carries it. A refused request
// costs nothing. An admitted one holds a slot until Release(ticket). A nil
// t, or one without limits (no rate, and MaxConcurrent negative or 0
// without a default), is always admitted (with a zero Ticket).
//
// A clock that steps back refills nothing; the bucket resumes from the
// latest time it saw.
func (l *Limiter) Acquire(t *Tenant, now time.Time) (Ticket, error) {
	if t == nil {
		return Ticket{}, nil
	}
	lim := t.Limits
	conc := l.concurrency(lim)
	if lim.RequestsPerSecond <= 0 && conc == 0 {
		return Ticket{}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.m[t.Name]
	if b == nil {
		b = &bucket{}
		l.m[t.Name] = b
	}
	if conc > 0 && b.inflight >= conc {
		return Ticket{}, &Error{Err: ErrConcurrency, Tenant: t.Name, RetryAfter: ConcurrencyRetryAfter}
	}
	if lim.RequestsPerSecond > 0 {
		burst := float64(max(lim.Burst, 1))
		switch {
		case !b.started:
			b.tokens, b.last, b.started = burst, now, true
		case now.After(b.last):
			b.tokens = min(burst, b.tokens+now.Sub(b.last).Seconds()*lim.RequestsPerSecond)
			b.last = now
		}
		b.tokens = min(b.tokens, burst) // a reload may have lowered the burst
		if b.tokens < 1 {
			wait := (1 - b.tokens) / lim.RequestsPerSecond
			return Ticket{}, &Error{Err: ErrRateLimited, Tenant: t.Name, RetryAfter: time.Duration(math.Ceil(wait)) * time.Second}
		}
		b.tokens--
	}
	b.inflight++
	return Ticket{tenant: t.Name, held: true}, nil
}

// Release ends the request Acquire admitted with tk; the zero Ticket is a
// no-op. Each ticket is released once.
func (l *Limiter) Release(tk Ticket) {
	if !tk.held {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.m[tk.tenant]; b != nil && b.inflight > 0 {
		b.inflight--
	}
}

// InFlight returns the requests of the tenant called name that Acquire
// admitted and Release did not end.
func (l *Limiter) InFlight(name string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.m[name]; b != nil {
		return b.inflight
	}
	return 0
}

// Forget drops the state of tenants keep does not name and that have
// nothing in flight (after a reload removed them).
func (l *Limiter) Forget(keep func(name string) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, b := range l.m {
		if b.inflight == 0 && !keep(name) {
			delete(l.m, name)
		}
	}
}
