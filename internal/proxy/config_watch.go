package proxy

import (
	"fmt"
	"time"
)

// WatchConfig bounds the waits on a target that stopped answering (a frozen
// process keeps accepting connections and says nothing); see "Frozen
// targets" in the package doc.
type WatchConfig struct {
	// FirstByteTimeout is the floor of the first-byte bound: how long an
	// attempt may go without its first body byte (or, once streaming,
	// without a chunk) before the target's liveness is checked. 0 disables
	// the watch (and StreamIdleTimeout). Default 2s.
	FirstByteTimeout time.Duration
	// FirstByteFactor scales the p99 of the target's observed time to
	// first byte of streamed responses: the bound is
	// max(FirstByteTimeout, FirstByteFactor x p99), capped at
	// FirstByteTimeoutMax. Since a target that passes the bound is only
	// checked, not given up, a short bound costs a liveness request and
	// a long one delays finding a frozen target: the default, 1, checks
	// the slowest 1% of a healthy target's answers. Default 1.
	FirstByteFactor float64
	// FirstByteTimeoutMax caps the adaptive bound. Default 30s.
	FirstByteTimeoutMax time.Duration
	// LivenessPath is the path a liveness check GETs on the target (vLLM's
	// /health at a cell, a cell's /healthz at the global tier); any answer
	// below 500 means the process is alive. Empty makes the first-byte
	// bound a hard limit with no check: only for fleets whose every request
	// streams, since a non-streamed response has no byte before its end.
	// Default "/health".
	LivenessPath string
	// LivenessTimeout bounds a liveness check. Default 1s.
	LivenessTimeout time.Duration
	// StreamIdleTimeout ends a stream that got no chunk for this long even
	// though its target still answers liveness checks, with an SSE error
	// event. Default 60s.
	StreamIdleTimeout time.Duration
	// Ejection configures outlier ejection of targets that time out or
	// fail in a row.
	Ejection EjectionConfig
}

// DefaultWatchConfig returns the default watch settings.
func DefaultWatchConfig() WatchConfig {
	return WatchConfig{
		FirstByteTimeout:    2 * time.Second,
		FirstByteFactor:     1,
		FirstByteTimeoutMax: 30 * time.Second,
		LivenessPath:        "/health",
		LivenessTimeout:     time.Second,
		StreamIdleTimeout:   time.Minute,
		Ejection:            DefaultEjectionConfig(),
	}
}

// Validate reports the first invalid field.
func (c WatchConfig) Validate() error {
	switch {
	case c.FirstByteTimeout < 0:
		return fmt.Errorf("proxy: WatchConfig.FirstByteTimeout must not be negative, got %v", c.FirstByteTimeout)
	case c.FirstByteTimeout == 0:
		return c.Ejection.Validate()
	case c.FirstByteFactor < 0:
		return fmt.Errorf("proxy: WatchConfig.FirstByteFactor must not be negative, got %v", c.FirstByteFactor)
	case c.FirstByteTimeoutMax < c.FirstByteTimeout:
		return fmt.Errorf("proxy: WatchConfig.FirstByteTimeoutMax must be at least FirstByteTimeout (%v), got %v", c.FirstByteTimeout, c.FirstByteTimeoutMax)
	case c.LivenessPath != "" && c.LivenessPath[0] != '/':
		return fmt.Errorf("proxy: WatchConfig.LivenessPath must start with /, got %q", c.LivenessPath)
	case c.LivenessPath != "" && c.LivenessTimeout <= 0:
		return fmt.Errorf("proxy: WatchConfig.LivenessTimeout must be positive, got %v", c.LivenessTimeout)
	case c.StreamIdleTimeout < c.FirstByteTimeout:
		return fmt.Errorf("proxy: WatchConfig.StreamIdleTimeout must be at least FirstByteTimeout (%v), got %v", c.FirstByteTimeout, c.StreamIdleTimeout)
	}
	return c.Ejection.Validate()
}
