package proxy

import (
	"errors"
	"sync/atomic"
)

// watchCounters count what the watch did.
type watchCounters struct {
	firstByteTimeouts atomic.Uint64
	stalls            atomic.Uint64
}

// WatchStats are a proxy's counters of frozen targets, for metrics.
type WatchStats struct {
	// FirstByteTimeouts counts attempts abandoned because their target sent
	// nothing within the first-byte bound and failed its liveness check
	// (each was retried on the next target, or failed the call).
	FirstByteTimeouts uint64
	// Stalls counts streams ended with an error event because their
	// target stopped sending (frozen, or idle for StreamIdleTimeout).
	Stalls uint64
	// EjectionStats are the ejector's counters.
	EjectionStats
}

// WatchStats returns the proxy's counters.
func (p *Proxy) WatchStats() WatchStats {
	return WatchStats{FirstByteTimeouts: p.stats.firstByteTimeouts.Load(), Stalls: p.stats.stalls.Load(), EjectionStats: p.ej.Stats()}
}

// Ejected reports whether the target at addr is ejected, and when its
// ejection time is over starts the check that readmits it once it answers.
// A tier uses it for the calls it makes itself (the global tier's probes).
func (p *Proxy) Ejected(addr string) bool {
	if !p.ej.Ejected(addr) {
		return false
	}
	p.readmit.due(addr)
	return true
}

// ReportFailure records a failed call to addr that the proxy did not make
// (a probe); timeout says it got no answer in time. Consecutive failures
// eject the target like failed attempts do.
func (p *Proxy) ReportFailure(addr string, timeout bool) { p.outcome(addr, timeout, true) }

// ReportSuccess records an answer from addr to a call the proxy did not
// make.
func (p *Proxy) ReportSuccess(addr string) { p.ej.Success(addr) }

// outcome feeds the ejector with an attempt's outcome.
func (p *Proxy) outcome(addr string, timeout, failed bool) {
	if failed {
		p.ej.Failure(addr, timeout)
		return
	}
	p.ej.Success(addr)
}

// ranked returns targets with the ejected ones last (see Ejector.Rank);
// targets itself when nothing moves. Ejected targets whose time is over get
// their readmission check.
func (p *Proxy) ranked(targets []Target) []Target {
	if p.ej.Stats().Ejected == 0 {
		return targets
	}
	perm := p.ej.Rank(len(targets), func(i int) string { return targets[i].Address })
	for _, t := range targets {
		p.Ejected(t.Address) // starts due checks; cheap when none is ejected
	}
	if perm == nil {
		return targets
	}
	out := make([]Target, len(targets))
	for j, i := range perm {
		out[j] = targets[i]
	}
	return out
}

// attemptFailed reports whether an attempt's error counts against its
// target: not the client's going away, not the call's own deadline.
func attemptFailed(err error) bool {
	return err != nil && !errors.Is(err, ErrCanceled)
}
