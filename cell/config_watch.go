package cell

import (
	"time"

	"github.com/cellrouter/cellrouter/internal/proxy"
)

// WatchConfig bounds the cell's waits on pods that stopped answering
// (routing.watch; see "Frozen targets" in package proxy): a first-byte
// bound learned from the pods' times to first token, a liveness check of
// the pod when it passes, a retry on the next pod while nothing reached the
// client, an SSE error event once streaming, and outlier ejection.
type WatchConfig struct {
	// FirstByteTimeout is the floor of the first-byte bound; 0 turns the
	// watch off.
	FirstByteTimeout time.Duration `yaml:"first_byte_timeout"`
	// FirstByteFactor scales the p99 of a pod's observed time to first
	// token into its bound.
	FirstByteFactor float64 `yaml:"first_byte_factor"`
	// FirstByteTimeoutMax caps the bound.
	FirstByteTimeoutMax time.Duration `yaml:"first_byte_timeout_max"`
	// LivenessPath is the pod path a liveness check GETs (vLLM's /health).
	LivenessPath string `yaml:"liveness_path"`
	// LivenessTimeout bounds one liveness check.
	LivenessTimeout time.Duration `yaml:"liveness_timeout"`
	// StreamIdleTimeout ends a stream whose live pod sent nothing for this
	// long.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout"`
	// EjectConsecutiveFailures is the failures in a row that eject a pod
	// (a timeout ejects at once); 0 turns ejection off.
	EjectConsecutiveFailures int `yaml:"eject_consecutive_failures"`
	// EjectBaseTime is a first ejection's length, multiplied by the
	// ejections in a row.
	EjectBaseTime time.Duration `yaml:"eject_base_time"`
	// EjectMaxTime caps an ejection's length.
	EjectMaxTime time.Duration `yaml:"eject_max_time"`
	// EjectMaxPercent is the largest share of a request's pods ranked last
	// for being ejected.
	EjectMaxPercent int `yaml:"eject_max_percent"`
}

// DefaultWatchConfig returns the proxy's defaults.
func DefaultWatchConfig() WatchConfig {
	return watchFromProxy(proxy.DefaultWatchConfig())
}

// watchFromProxy converts the proxy's settings.
func watchFromProxy(p proxy.WatchConfig) WatchConfig {
	return WatchConfig{
		FirstByteTimeout: p.FirstByteTimeout, FirstByteFactor: p.FirstByteFactor, FirstByteTimeoutMax: p.FirstByteTimeoutMax,
		LivenessPath: p.LivenessPath, LivenessTimeout: p.LivenessTimeout, StreamIdleTimeout: p.StreamIdleTimeout,
		EjectConsecutiveFailures: p.Ejection.ConsecutiveFailures, EjectBaseTime: p.Ejection.BaseEjectionTime,
		EjectMaxTime: p.Ejection.MaxEjectionTime, EjectMaxPercent: p.Ejection.MaxEjectionPercent,
	}
}

// proxy returns the proxy's settings.
func (w WatchConfig) proxy() proxy.WatchConfig {
	return proxy.WatchConfig{
		FirstByteTimeout: w.FirstByteTimeout, FirstByteFactor: w.FirstByteFactor, FirstByteTimeoutMax: w.FirstByteTimeoutMax,
		LivenessPath: w.LivenessPath, LivenessTimeout: w.LivenessTimeout, StreamIdleTimeout: w.StreamIdleTimeout,
		Ejection: proxy.EjectionConfig{ConsecutiveFailures: w.EjectConsecutiveFailures, BaseEjectionTime: w.EjectBaseTime,
			MaxEjectionTime: w.EjectMaxTime, MaxEjectionPercent: w.EjectMaxPercent},
	}
}
