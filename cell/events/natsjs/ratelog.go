package natsjs

import (
	"log/slog"
	"sync"
	"time"
)

// rateLog logs at most one line per interval and folds the lines it
// suppresses into the next one it writes, as a count. A broken publisher
// sending thousands of bad messages a second costs one line a second.
type rateLog struct {
	log   *slog.Logger
	every time.Duration
	now   func() time.Time

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// newRateLog returns a rateLog writing to log at most once per every.
func newRateLog(log *slog.Logger, every time.Duration) *rateLog {
	return &rateLog{log: log, every: every, now: time.Now}
}

// warn logs msg with args unless a line went out less than every ago; it
// reports whether it logged.
func (r *rateLog) warn(msg string, args ...any) bool {
	r.mu.Lock()
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < r.every {
		r.suppressed++
		r.mu.Unlock()
		return false
	}
	r.last = now
	n := r.suppressed
	r.suppressed = 0
	r.mu.Unlock()
	if n > 0 {
		args = append(args, "suppressed", n)
	}
	r.log.Warn(msg, args...)
	return true
}
