package proxy

import (
	"fmt"
	"sync"
	"time"
)

// EjectionConfig configures outlier ejection (see Ejector).
type EjectionConfig struct {
	// ConsecutiveFailures is the number of failures in a row (refused
	// connections, 5xx answers, broken responses) that eject a target. A
	// timeout (a target that answered nothing within the first-byte bound
	// and failed its liveness check, or a stalled stream) ejects at once.
	// 0 disables ejection. Default 3.
	ConsecutiveFailures int
	// BaseEjectionTime is how long a first ejection lasts; the n-th
	// ejection in a row lasts n times as long, up to MaxEjectionTime.
	// Default 5s.
	BaseEjectionTime time.Duration
	// MaxEjectionTime caps an ejection's length. Default 60s.
	MaxEjectionTime time.Duration
	// MaxEjectionPercent is the largest share of a call's targets ranked
	// last for being ejected; the others keep their rank, so ejection never
	// empties a fleet. Default 50.
	MaxEjectionPercent int
}

// DefaultEjectionConfig returns the default ejection settings.
func DefaultEjectionConfig() EjectionConfig {
	return EjectionConfig{ConsecutiveFailures: 3, BaseEjectionTime: 5 * time.Second, MaxEjectionTime: time.Minute, MaxEjectionPercent: 50}
}

// Validate reports the first invalid field.
func (c EjectionConfig) Validate() error {
	switch {
	case c.ConsecutiveFailures < 0:
		return fmt.Errorf("proxy: EjectionConfig.ConsecutiveFailures must not be negative, got %d", c.ConsecutiveFailures)
	case c.ConsecutiveFailures > 0 && c.BaseEjectionTime <= 0:
		return fmt.Errorf("proxy: EjectionConfig.BaseEjectionTime must be positive, got %v", c.BaseEjectionTime)
	case c.ConsecutiveFailures > 0 && c.MaxEjectionTime < c.BaseEjectionTime:
		return fmt.Errorf("proxy: EjectionConfig.MaxEjectionTime must be at least BaseEjectionTime (%v), got %v", c.BaseEjectionTime, c.MaxEjectionTime)
	case c.MaxEjectionPercent < 0 || c.MaxEjectionPercent > 100:
		return fmt.Errorf("proxy: EjectionConfig.MaxEjectionPercent must be in [0, 100], got %d", c.MaxEjectionPercent)
	}
	return nil
}

// Ejector decides which targets are ejected, Envoy's outlier detection
// reduced to what a router needs: a target ejected by a timeout or by
// ConsecutiveFailures failures in a row stays ejected for
// BaseEjectionTime times its number of ejections in a row (capped), and
// past that until it answers again: the caller checks it (Due) and calls
// Success or Failure with the check's outcome. A success resets the count
// of ejections in a row once the target has stayed in for a
// BaseEjectionTime. Keys are target addresses. The clock is injected. It is
// safe for concurrent use.
type Ejector struct {
	cfg EjectionConfig
	now func() time.Time

	mu    sync.Mutex
	peers map[string]*peerState
	stats EjectionStats
}

// peerState is what the ejector knows of one target.
type peerState struct {
	failures  int       // consecutive failures
	ejections int       // ejections in a row
	ejected   bool      // out of the candidates until it answers again
	until     time.Time // end of the current ejection time
	checking  bool      // Due handed out a check that has not reported
	since     time.Time // when it was last readmitted
}

// EjectionStats are an ejector's counters.
type EjectionStats struct {
	// Ejections and Readmissions count the ejections and the targets that
	// answered again after one.
	Ejections, Readmissions uint64
	// Ejected is the number of targets ejected now.
	Ejected int
}

// NewEjector returns an ejector with cfg and the clock now (time.Now when
// nil).
func NewEjector(cfg EjectionConfig, now func() time.Time) *Ejector {
	if now == nil {
		now = time.Now
	}
	return &Ejector{cfg: cfg, now: now, peers: map[string]*peerState{}}
}

// maxPeers bounds the targets the ejector remembers; beyond it the ones in
// good standing are forgotten (they carry at most a failure count).
const maxPeers = 4096

// peer returns key's state, creating it.
func (e *Ejector) peer(key string) *peerState {
	p := e.peers[key]
	if p == nil {
		if len(e.peers) >= maxPeers {
			for k, q := range e.peers {
				if !q.ejected {
					delete(e.peers, k)
				}
			}
		}
		p = &peerState{}
		e.peers[key] = p
	}
	return p
}

// Failure records a failed attempt on key (timeout: it answered nothing in
// time) and reports whether key is ejected now (newly or still).
func (e *Ejector) Failure(key string, timeout bool) bool {
	if e == nil || e.cfg.ConsecutiveFailures == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peer(key)
	p.failures++
	p.checking = false
	now := e.now()
	if p.ejected {
		if !now.Before(p.until) { // its check failed: eject it again, longer
			e.eject(p, now)
		}
		return true
	}
	if timeout || p.failures >= e.cfg.ConsecutiveFailures {
		if p.ejections > 0 && now.Sub(p.since) >= e.cfg.BaseEjectionTime {
			p.ejections = 0 // it stayed in long enough: a new series
		}
		e.eject(p, now)
		e.stats.Ejected++
		return true
	}
	return false
}

// eject starts an ejection of p at now.
func (e *Ejector) eject(p *peerState, now time.Time) {
	p.ejected = true
	p.ejections++
	d := time.Duration(p.ejections) * e.cfg.BaseEjectionTime
	if d > e.cfg.MaxEjectionTime || d <= 0 {
		d = e.cfg.MaxEjectionTime
	}
	p.until = now.Add(d)
	e.stats.Ejections++
}

// Success records an answer from key and reports whether that readmitted
// it.
func (e *Ejector) Success(key string) bool {
	if e == nil || e.cfg.ConsecutiveFailures == 0 {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peers[key]
	if p == nil {
		return false
	}
	p.failures, p.checking = 0, false
	if !p.ejected {
		return false
	}
	p.ejected = false
	p.since = e.now()
	e.stats.Ejected--
	e.stats.Readmissions++
	return true
}

// Ejected reports whether key is ejected.
func (e *Ejector) Ejected(key string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peers[key]
	return p != nil && p.ejected
}

// Due reports whether key is ejected, its ejection time is over and no
// check of it is pending; it then counts the check as pending, so one
// caller checks it and reports the outcome with Success or Failure.
func (e *Ejector) Due(key string) bool {
	if e == nil {
		return false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.peers[key]
	if p == nil || !p.ejected || p.checking || e.now().Before(p.until) {
		return false
	}
	p.checking = true
	return true
}

// Stats returns the ejector's counters.
func (e *Ejector) Stats() EjectionStats {
	if e == nil {
		return EjectionStats{}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stats
}

// Rank returns the order in which to try n targets (keyOf(i) is the key of
// the i-th) so that ejected ones come last, in their order: perm[j] is the
// index of the j-th to try. At most MaxEjectionPercent of n targets move
// back (those ejected until the latest); the other ejected ones keep their
// rank. Rank returns nil when nothing moves.
func (e *Ejector) Rank(n int, keyOf func(i int) string) (perm []int) {
	if e == nil || e.cfg.ConsecutiveFailures == 0 || n < 2 {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.stats.Ejected == 0 {
		return nil
	}
	budget := n * e.cfg.MaxEjectionPercent / 100
	if budget == 0 {
		return nil
	}
	var out []int // indices ejected, by until
	for i := range n {
		if p := e.peers[keyOf(i)]; p != nil && p.ejected {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		return nil
	}
	if len(out) > budget {
		// Keep the budget's worth that stay out the longest.
		sortByUntil(out, func(i int) time.Time { return e.peers[keyOf(i)].until })
		out = out[len(out)-budget:]
		sortInts(out)
	}
	perm = make([]int, 0, n)
	j := 0
	for i := range n {
		if j < len(out) && out[j] == i {
			j++
			continue
		}
		perm = append(perm, i)
	}
	return append(perm, out...)
}

// sortByUntil sorts idx by until (stable, ascending): insertion sort, the
// lists are a handful long.
func sortByUntil(idx []int, until func(int) time.Time) {
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && until(idx[j]).Before(until(idx[j-1])); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
}

// sortInts sorts a short list ascending.
func sortInts(a []int) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j] < a[j-1]; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}
