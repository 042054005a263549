package flowcontrol

import (
	"errors"
	"time"
)

// Sentinel errors. A request the queue refuses gets an *Error wrapping
// ErrDeadline or ErrShed; the cell answers both with 429 and Retry-After.
var (
	// ErrConfig wraps every error of Config.Validate.
	ErrConfig = errors.New("flowcontrol: bad config")
	// ErrDeadline: the request waited its whole deadline.
	ErrDeadline = errors.New("flowcontrol: queue deadline passed")
	// ErrShed: the queue was full and the request was in its lowest band.
	ErrShed = errors.New("flowcontrol: shed from a full queue")
	// ErrClosed: the controller stopped while the request waited.
	ErrClosed = errors.New("flowcontrol: controller closed")
)

// Error is a request the queue refused.
type Error struct {
	// Err is ErrDeadline or ErrShed.
	Err error
	// Waited is how long the request waited.
	Waited time.Duration
	// RetryAfter is when the client may try again: the wait a new request
	// of its band would have now, at least a second.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return e.Err.Error() + " after " + e.Waited.Round(time.Millisecond).String()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }
