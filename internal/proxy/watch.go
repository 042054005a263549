package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// Causes with which a watch cancels its attempt.
var (
	// errFrozen: the target sent nothing for the first-byte bound (or,
	// streaming, for a chunk's) and did not answer a liveness check.
	errFrozen = errors.New("proxy: target stopped answering")
	// errIdle: a stream got no chunk for StreamIdleTimeout.
	errIdle = errors.New("proxy: stream idle timeout")
)

// watch is the watchdog of one attempt: while the attempt makes no
// progress (its request sent, then each chunk read) for the target's
// first-byte bound, it checks the target's liveness, and cancels the
// attempt with errFrozen when the target does not answer; once the stream
// reached the client it also cancels it with errIdle after
// StreamIdleTimeout without a chunk. It runs on a timer (time.AfterFunc):
// an attempt that ends within the bound costs no goroutine. Its check is
// owned by the attempt, whose stop waits for it (never for a liveness
// request: that runs on the proxy's own goroutine).
type watch struct {
	p      *Proxy
	addr   string
	bound  time.Duration
	idle   time.Duration
	cancel context.CancelCauseFunc

	progress  atomic.Int64 // unix nanoseconds of the last progress
	streaming atomic.Bool  // a byte reached the client
	fired     atomic.Pointer[error]
	checked   time.Time // the last liveness check that said alive (check only)

	mu      sync.Mutex
	stopped bool
	timer   *time.Timer
	stopc   chan struct{}  // closed by stop: a check in flight stops waiting
	running sync.WaitGroup // the check in flight
}

// startWatch starts the watch of an attempt on t whose context cancel
// cancels; nil when the watch is disabled.
func (p *Proxy) startWatch(t Target, cancel context.CancelCauseFunc) *watch {
	if p.bounds == nil {
		return nil
	}
	w := &watch{p: p, addr: t.Address, bound: p.bounds.bound(t.Address), idle: p.cfg.Watch.StreamIdleTimeout,
		cancel: cancel, stopc: make(chan struct{})}
	w.progress.Store(time.Now().UnixNano())
	w.mu.Lock()
	w.timer = time.AfterFunc(w.bound, w.check)
	w.mu.Unlock()
	return w
}

// check is the timer's function: one look at the attempt, then the timer
// set for the next one unless the watch fired or stopped.
func (w *watch) check() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	w.running.Add(1)
	w.mu.Unlock()
	defer w.running.Done()
	next, done := w.look()
	if done {
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.timer.Reset(next)
	}
	w.mu.Unlock()
}

// look decides on the attempt's progress: it fires the watch (done), or
// returns how long until the next look.
func (w *watch) look() (next time.Duration, done bool) {
	now := time.Now()
	last := time.Unix(0, w.progress.Load())
	streaming := w.streaming.Load()
	if streaming && now.Sub(last) >= w.idle {
		w.fire(errIdle)
		return 0, true
	}
	stale := last
	if w.checked.After(stale) {
		stale = w.checked
	}
	wake := stale.Add(w.bound)
	if idleAt := last.Add(w.idle); streaming && idleAt.Before(wake) {
		wake = idleAt
	}
	if now.Before(wake) {
		return wake.Sub(now), false
	}
	switch {
	case w.p.live != nil:
		alive, stopped := w.p.live.alive(w.stopc, w.addr)
		if stopped {
			return 0, true
		}
		if !alive {
			w.fire(errFrozen)
			return 0, true
		}
		w.checked = time.Now()
	case !streaming:
		w.fire(errFrozen) // no liveness path: the bound is hard
		return 0, true
	default:
		w.checked = now // streaming without a check: only the idle bound
	}
	return w.bound, false
}

// fire cancels the attempt with cause.
func (w *watch) fire(cause error) {
	w.fired.Store(&cause)
	w.cancel(cause)
}

// tick records progress: the attempt read a chunk.
func (w *watch) tick() {
	if w != nil {
		w.progress.Store(time.Now().UnixNano())
	}
}

// committed records that a byte reached the client: from now on the idle
// bound applies too.
func (w *watch) committed() {
	if w != nil {
		w.streaming.Store(true)
	}
}

// cause returns why the watch cancelled the attempt, nil when it did not.
func (w *watch) cause() error {
	if w == nil {
		return nil
	}
	if c := w.fired.Load(); c != nil {
		return *c
	}
	return nil
}

// stop ends the watch and waits for a check in flight.
func (w *watch) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.stopped = true
	w.timer.Stop()
	w.mu.Unlock()
	close(w.stopc)
	w.running.Wait()
}

// stallEvent is the SSE event that ends a stream the watch cut: an OpenAI
// error object, as vLLM sends when a stream fails.
func stallEvent(cause error) []byte {
	msg := "the upstream server stopped sending the stream"
	code := "upstream_stalled"
	if errors.Is(cause, errIdle) {
		msg = "the upstream server sent nothing for the stream idle timeout"
		code = "stream_idle_timeout"
	}
	body := openai.NewErrorBody(openai.TypeServer, msg, "", code)
	data, _ := json.Marshal(body) // strings and a code NewErrorBody built
	out := make([]byte, 0, len(data)+8)
	out = append(out, "data: "...)
	out = append(out, data...)
	return append(out, "\n\n"...)
}

// writeStallEvent ends a stream the watch cut with stallEvent, flushed.
func writeStallEvent(w http.ResponseWriter, cause error) {
	if _, err := w.Write(stallEvent(cause)); err == nil {
		_ = http.NewResponseController(w).Flush()
	}
}
