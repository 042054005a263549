package grpcpub

import (
	"log/slog"
	"sync"
	"time"
)

// rateLog writes at most one warning per interval and counts the ones it
// holds back into the next it writes: a publisher refused a thousand times
// a second costs one line a second.
type rateLog struct {
	log   *slog.Logger
	every time.Duration

	mu   sync.Mutex
	next time.Time
	held int
}

// warn logs msg with args unless a line went out less than every ago.
func (r *rateLog) warn(msg string, args ...any) {
	if r.log == nil {
		return
	}
	now := time.Now()
	r.mu.Lock()
	if now.Before(r.next) {
		r.held++
		r.mu.Unlock()
		return
	}
	r.next = now.Add(r.every)
	held := r.held
	r.held = 0
	r.mu.Unlock()
	r.log.Warn(msg, append(args, "suppressed", held)...)
}
