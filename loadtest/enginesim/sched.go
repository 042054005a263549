package enginesim

import (
	"container/list"
	"context"
	"sync"
)

// scheduler is the running batch: a request runs when one of max slots is
// free and its KV blocks fit beside the running requests' in capacity
// blocks (vLLM's scheduler admits the waiting head only when its blocks
// can be allocated; cached blocks no running request holds are free), the
// others wait in FIFO order: the head that does not fit blocks the ones
// behind it, as in vLLM's first-come-first-served policy. A request alone
// always runs, however large. A waiter whose context ends leaves the
// queue at once; what a finished request frees is handed to the oldest
// waiters directly, so a newcomer never overtakes the queue. It is safe
// for concurrent use.
type scheduler struct {
	mu       sync.Mutex
	max      int
	capacity int // KV blocks; 0: slots only
	running  int
	held     int       // blocks the running requests hold
	waiting  list.List // of *waiter, oldest first
}

// waiter is one queued request.
type waiter struct {
	need    int           // its KV blocks
	ready   chan struct{} // closed when it runs
	granted bool          // set under mu together with closing ready
}

// newScheduler returns a scheduler of max slots over capacity KV blocks
// (0: no KV limit).
func newScheduler(max, capacity int) *scheduler {
	return &scheduler{max: max, capacity: capacity}
}

// fitsLocked reports whether a request of need blocks may run now.
func (s *scheduler) fitsLocked(need int) bool {
	return s.running < s.max && (s.capacity <= 0 || s.running == 0 || s.held+need <= s.capacity)
}

// acquire blocks until the caller, which needs need KV blocks, runs, or
// returns ctx's error (holding nothing) when ctx ends first.
func (s *scheduler) acquire(ctx context.Context, need int) error {
	s.mu.Lock()
	if s.waiting.Len() == 0 && s.fitsLocked(need) {
		s.running++
		s.held += need
		s.mu.Unlock()
		return nil
	}
	w := &waiter{need: need, ready: make(chan struct{})}
	e := s.waiting.PushBack(w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// It was admitted as the context ended: pass its room on.
		s.mu.Unlock()
		s.release(need)
		return ctx.Err()
	}
	s.waiting.Remove(e)
	s.grantLocked() // the head may have been this one
	s.mu.Unlock()
	return ctx.Err()
}

// release ends a running request of need blocks and admits the waiters
// that now fit, oldest first.
func (s *scheduler) release(need int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	s.held -= need
	s.grantLocked()
}

// grantLocked admits waiters from the head while they fit.
func (s *scheduler) grantLocked() {
	for e := s.waiting.Front(); e != nil; e = s.waiting.Front() {
		w := e.Value.(*waiter)
		if !s.fitsLocked(w.need) {
			return
		}
		s.waiting.Remove(e)
		s.running++
		s.held += w.need
		w.granted = true
		close(w.ready)
	}
}

// counts returns the number of running and waiting requests.
func (s *scheduler) counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, s.waiting.Len()
}
