package flowcontrol

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// TimeoutHeader is the request header in which a client says how long it
// is willing to wait for its answer to start: a Go duration ("2.5s",
// "800ms") or a number of seconds ("30"). A request waits in the queue no
// longer than it, nor than its tenant's max_queue_wait, nor than
// default_deadline; past the shortest, the answer is 429 with Retry-After.
const TimeoutHeader = "X-Cellrouter-Timeout"

// MaxTimeout bounds what TimeoutHeader may say; longer values are taken
// as this.
const MaxTimeout = 24 * time.Hour

// ErrTimeoutHeader: TimeoutHeader holds no positive duration (HTTP 400).
var ErrTimeoutHeader = errors.New("flowcontrol: " + TimeoutHeader + " must be a positive duration (\"2.5s\") or seconds (\"30\")")

// ParseTimeout parses a TimeoutHeader value: 0 and no error for "" (the
// client set none), ErrTimeoutHeader for anything that is not a positive
// duration; values over MaxTimeout are capped.
func ParseTimeout(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, nil
	}
	if len(s) > 32 {
		return 0, ErrTimeoutHeader
	}
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if !(secs > 0) || math.IsInf(secs, 0) {
			return 0, ErrTimeoutHeader
		}
		if secs >= MaxTimeout.Seconds() {
			return MaxTimeout, nil
		}
		d := time.Duration(secs * float64(time.Second))
		if d <= 0 {
			return 0, ErrTimeoutHeader
		}
		return d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, ErrTimeoutHeader
	}
	return min(d, MaxTimeout), nil
}
