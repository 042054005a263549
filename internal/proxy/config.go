package proxy

import (
	"crypto/tls"
	"fmt"
	"time"
)

// Config configures a Proxy. The zero value is not valid; start from
// DefaultConfig.
type Config struct {
	// ConnectTimeout bounds dialling a pod. Default 2s.
	ConnectTimeout time.Duration
	// ResponseHeaderTimeout bounds the wait for a pod's response headers
	// after the request was sent; past it the attempt fails and the next
	// target is tried. vLLM sends the headers of a streamed response at
	// once but those of a non-streamed one only when generation is done, so
	// this also bounds non-streamed generation. 0 means no bound. Default
	// 5m.
	ResponseHeaderTimeout time.Duration
	// RequestTimeout bounds a whole Forward or ForwardDisaggregated call,
	// all attempts and the relay included. 0 means no bound. Default 10m.
	RequestTimeout time.Duration
	// IdleConnTimeout is how long an idle keep-alive connection to a pod is
	// kept. Default 90s.
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost is the number of idle keep-alive connections
	// kept per pod. Default 64.
	MaxIdleConnsPerHost int
	// MaxAttempts is the number of targets tried per leg before giving up.
	// Default 3.
	MaxAttempts int
	// MaxPrefillResponseBytes bounds the prefill leg's response, which is
	// read whole to take its kv_transfer_params. Default 1 MiB.
	MaxPrefillResponseBytes int64
	// RelayResponseHeaders are the upstream response headers relayed to
	// the client (canonical or not; a trailing "*" matches a prefix); the
	// rest, and any whose value names the upstream's host, are dropped.
	// Default DefaultRelayResponseHeaders.
	RelayResponseHeaders []string
	// BufferSize is the size of the relay's read buffer: the largest chunk
	// written to the client at once. Default 32 KiB.
	BufferSize int
	// TLS, when set, makes every call HTTPS with this client configuration
	// (a cell's pods behind TLS, or the cells behind mutual TLS for the
	// global tier's hand-off). Nil: plain HTTP.
	TLS *tls.Config
	// Watch bounds the waits on targets that stopped answering and ejects
	// them (see WatchConfig).
	Watch WatchConfig
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		ConnectTimeout:          2 * time.Second,
		ResponseHeaderTimeout:   5 * time.Minute,
		RequestTimeout:          10 * time.Minute,
		IdleConnTimeout:         90 * time.Second,
		MaxIdleConnsPerHost:     64,
		MaxAttempts:             3,
		MaxPrefillResponseBytes: 1 << 20,
		BufferSize:              32 << 10,
		Watch:                   DefaultWatchConfig(),
		RelayResponseHeaders:    DefaultRelayResponseHeaders(),
	}
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	switch {
	case c.ConnectTimeout <= 0:
		return fmt.Errorf("proxy: Config.ConnectTimeout must be positive, got %v", c.ConnectTimeout)
	case c.ResponseHeaderTimeout < 0:
		return fmt.Errorf("proxy: Config.ResponseHeaderTimeout must not be negative, got %v", c.ResponseHeaderTimeout)
	case c.RequestTimeout < 0:
		return fmt.Errorf("proxy: Config.RequestTimeout must not be negative, got %v", c.RequestTimeout)
	case c.IdleConnTimeout < 0:
		return fmt.Errorf("proxy: Config.IdleConnTimeout must not be negative, got %v", c.IdleConnTimeout)
	case c.MaxIdleConnsPerHost < 0:
		return fmt.Errorf("proxy: Config.MaxIdleConnsPerHost must not be negative, got %d", c.MaxIdleConnsPerHost)
	case c.MaxAttempts < 1:
		return fmt.Errorf("proxy: Config.MaxAttempts must be at least 1, got %d", c.MaxAttempts)
	case c.MaxPrefillResponseBytes < 1:
		return fmt.Errorf("proxy: Config.MaxPrefillResponseBytes must be positive, got %d", c.MaxPrefillResponseBytes)
	case c.BufferSize < 512:
		return fmt.Errorf("proxy: Config.BufferSize must be at least 512, got %d", c.BufferSize)
	}
	if err := CheckRelayHeaders(c.RelayResponseHeaders); err != nil {
		return fmt.Errorf("proxy: Config.RelayResponseHeaders: %w", err)
	}
	return c.Watch.Validate()
}
