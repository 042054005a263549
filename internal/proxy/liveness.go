package proxy

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// liveness checks whether a target's process answers at all: a GET of
// WatchConfig.LivenessPath within LivenessTimeout, any status below 500.
// Concurrent checks of one target share one request, and an answer stays
// good for fresh, so many slow calls to one live target cost it one check
// per first-byte bound. It is safe for concurrent use.
type liveness struct {
	p       *Proxy
	path    string
	timeout time.Duration
	fresh   time.Duration

	mu      sync.Mutex
	targets map[string]*liveState
	wg      sync.WaitGroup // checks in flight
}

// liveState is one target's last check and the check in flight.
type liveState struct {
	at       time.Time     // when the last check ended
	alive    bool          // its outcome
	inflight chan struct{} // closed when the check in flight ends; nil when none
}

func newLiveness(p *Proxy, c WatchConfig) *liveness {
	return &liveness{p: p, path: c.LivenessPath, timeout: c.LivenessTimeout, fresh: c.FirstByteTimeout / 2, targets: map[string]*liveState{}}
}

// alive reports whether the target at addr answered a liveness check, one
// made now or one that ended less than fresh ago; stopped reports that stop
// was closed first (a nil stop waits for the check, which is bounded).
func (l *liveness) alive(stop <-chan struct{}, addr string) (ok, stopped bool) {
	l.mu.Lock()
	s := l.targets[addr]
	if s == nil {
		if len(l.targets) >= maxPeers {
			clear(l.targets)
		}
		s = &liveState{}
		l.targets[addr] = s
	}
	if s.inflight == nil && !s.at.IsZero() && time.Since(s.at) < l.fresh {
		ok := s.alive
		l.mu.Unlock()
		return ok, false
	}
	wait := s.inflight
	if wait == nil {
		// The check runs on a goroutine of the proxy's: a caller that
		// stops waiting (its attempt ended) does not wait for it.
		wait = make(chan struct{})
		s.inflight = wait
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			ok := l.check(addr)
			l.mu.Lock()
			s.at, s.alive, s.inflight = time.Now(), ok, nil
			l.mu.Unlock()
			close(wait)
		}()
	}
	l.mu.Unlock()
	select {
	case <-wait:
	case <-stop:
		return false, true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return s.alive, false
}

// close waits for the checks in flight (each bounded by LivenessTimeout).
func (l *liveness) close() { l.wg.Wait() }

// check makes one liveness request to addr. It runs under its own deadline,
// not a caller's: its outcome is shared.
func (l *liveness) check(addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, l.p.scheme+"://"+addr+l.path, nil)
	if err != nil {
		return false
	}
	resp, err := l.p.transport.RoundTrip(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	return resp.StatusCode < 500
}

// readmitter checks ejected targets whose ejection time is over, each on a
// goroutine of its own that the proxy's Close waits for, and readmits those
// that answer. Without a liveness path a target is readmitted when its
// ejection time is over.
type readmitter struct {
	p *Proxy

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// due starts a check of addr when the ejector says one is due.
func (r *readmitter) due(addr string) {
	if !r.p.ej.Due(addr) {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		r.p.ej.Failure(addr, true) // closing: leave it out
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		alive := r.p.live == nil
		if !alive {
			alive, _ = r.p.live.alive(nil, addr)
		}
		if alive {
			r.p.ej.Success(addr)
		} else {
			r.p.ej.Failure(addr, true)
		}
	}()
}

// close waits for the checks in flight; later ones are not started.
func (r *readmitter) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.wg.Wait()
}
