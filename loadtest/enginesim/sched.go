package enginesim

import (
	"container/list"
	"context"
	"sync"
)

// scheduler is the running batch: at most max requests hold a slot, the
// others wait in FIFO order. A waiter whose context ends leaves the queue
// at once; a slot released is handed to the oldest waiter directly, so a
// newcomer never overtakes the queue. It is safe for concurrent use.
type scheduler struct {
	mu      sync.Mutex
	max     int
	running int
	waiting list.List // of *waiter, oldest first
}

// waiter is one queued request.
type waiter struct {
	ready   chan struct{} // closed when the slot is granted
	granted bool          // set under mu together with closing ready
}

// newScheduler returns a scheduler of max slots.
func newScheduler(max int) *scheduler {
	return &scheduler{max: max}
}

// acquire blocks until the caller holds a slot, or returns ctx's error
// (holding nothing) when ctx ends first.
func (s *scheduler) acquire(ctx context.Context) error {
	s.mu.Lock()
	if s.running < s.max && s.waiting.Len() == 0 {
		s.running++
		s.mu.Unlock()
		return nil
	}
	w := &waiter{ready: make(chan struct{})}
	e := s.waiting.PushBack(w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// The slot arrived as the context ended: pass it on.
		s.mu.Unlock()
		s.release()
		return ctx.Err()
	}
	s.waiting.Remove(e)
	s.mu.Unlock()
	return ctx.Err()
}

// release gives up a slot: to the oldest waiter if any, else back to the
// pool.
func (s *scheduler) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.waiting.Front(); e != nil {
		w := s.waiting.Remove(e).(*waiter)
		w.granted = true
		close(w.ready)
		return
	}
	s.running--
}

// counts returns the number of running and waiting requests.
func (s *scheduler) counts() (running, waiting int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running, s.waiting.Len()
}
