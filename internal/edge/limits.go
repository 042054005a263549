package edge

import (
	"errors"
	"fmt"
	"time"
)

// ErrConfig wraps every configuration error of Limits.
var ErrConfig = errors.New("edge: invalid limits")

// Limits bound what one client may hold of a server. Every field has a
// flag in both daemons and a label in cellrouter_limit_hits_total.
type Limits struct {
	// MaxBodyBytes bounds a request body (HTTP) or message (gRPC): 413.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds a request's headers, request line included:
	// 431. The HTTP server itself refuses headers past twice this plus
	// 4 KiB without reading them (431 too, answered by the connection).
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds the wait for a request's headers (408 if
	// some arrived, then the connection is closed), and for the TLS
	// handshake (closed).
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds the wait for a request's whole body from its
	// headers on, so a client sending a byte now and then cannot hold a
	// connection and a handler: 408. It does not bound the response.
	BodyTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long (HTTP), and
	// gRPC connections without calls this long.
	IdleTimeout time.Duration
	// MaxConcurrentStreams bounds the requests a server serves at once
	// (HTTP, health and metrics apart: 503 with Retry-After) and the calls
	// of each gRPC server (Unavailable), and is HTTP/2's per-connection
	// limit of the gRPC server.
	MaxConcurrentStreams int
	// MaxBufferedBytes bounds the data-plane request body bytes the
	// process holds at once, all requests together (see Budget): past it
	// a request gets 503 with Retry-After before its body is read. 0 is
	// unlimited; otherwise at least MaxBodyBytes, so that every body the
	// server accepts can pass alone.
	MaxBufferedBytes int64
	// TenantMaxConcurrent is the requests in flight of each tenant whose
	// key file entry sets no max_concurrent (429 with Retry-After past
	// it); 0 is unlimited.
	TenantMaxConcurrent int
}

// DefaultLimits returns limits that no well-behaved OpenAI client meets: a
// 32 MiB body (a 1M-token prompt as ids), 64 KiB of headers, 10 s for the
// headers, 60 s for the body, 2 minutes idle, 4096 concurrent requests,
// 128 MiB of request bodies held at once (four of the largest, or about
// 6,000 of 20 KiB), 128 requests in flight per tenant.
func DefaultLimits() Limits {
	return Limits{
		MaxBodyBytes:         32 << 20,
		MaxHeaderBytes:       64 << 10,
		ReadHeaderTimeout:    10 * time.Second,
		BodyTimeout:          60 * time.Second,
		IdleTimeout:          2 * time.Minute,
		MaxConcurrentStreams: 4096,
		MaxBufferedBytes:     128 << 20,
		TenantMaxConcurrent:  128,
	}
}

// Validate reports the first bad field, named with prefix ("limits" in
// celld's YAML, "" for flags) in its configuration spelling.
func (l Limits) Validate(prefix string) error {
	name := func(f string) string {
		if prefix == "" {
			return f
		}
		return prefix + "." + f
	}
	bad := func(f string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrConfig, name(f), v, why)
	}
	switch {
	case l.MaxBodyBytes < 1024:
		return bad("max_body_bytes", l.MaxBodyBytes, "want at least 1024")
	case l.MaxHeaderBytes < 4096:
		return bad("max_header_bytes", l.MaxHeaderBytes, "want at least 4096")
	case l.ReadHeaderTimeout <= 0:
		return bad("read_header_timeout", l.ReadHeaderTimeout, "must be positive")
	case l.BodyTimeout <= 0:
		return bad("body_timeout", l.BodyTimeout, "must be positive")
	case l.IdleTimeout <= 0:
		return bad("idle_timeout", l.IdleTimeout, "must be positive")
	case l.MaxConcurrentStreams < 1:
		return bad("max_concurrent_streams", l.MaxConcurrentStreams, "want at least 1")
	case l.MaxBufferedBytes != 0 && l.MaxBufferedBytes < l.MaxBodyBytes:
		return bad("max_buffered_bytes", l.MaxBufferedBytes, "want 0 (unlimited) or at least max_body_bytes")
	case l.TenantMaxConcurrent < 0:
		return bad("tenant_max_concurrent", l.TenantMaxConcurrent, "want 0 (unlimited) or more")
	}
	return nil
}
