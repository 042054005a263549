package proxy

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync"
	"time"
)

// Target is one pod a request may be sent to.
type Target struct {
	// Pod is the pod's id, for hooks and errors.
	Pod string
	// Address is the pod's host:port; requests go to http://Address (or
	// https://Address with Config.TLS).
	Address string
	// Header holds extra request headers for this pod (a cache hint, for
	// example); they replace headers of the same name from the client.
	Header http.Header
}

// Usage is the token accounting a pod reported.
type Usage struct {
	// PromptTokens is the number of prompt tokens.
	PromptTokens int
	// CompletionTokens is the number of generated tokens.
	CompletionTokens int
	// CachedTokens is the number of prompt tokens the pod served from its
	// prefix cache (usage.prompt_tokens_details.cached_tokens), 0 when not
	// reported.
	CachedTokens int
}

// Result describes one attempt that ended a call (or a prefill leg).
type Result struct {
	// Status is the HTTP status the pod answered, or the status the proxy
	// wrote when the attempt failed before a response (502, 504), or 0 when
	// the client went away first.
	Status int
	// Bytes is the number of body bytes relayed to the client.
	Bytes int64
	// Err is nil when the pod's response was relayed whole.
	Err error
	// Duration runs from the attempt's start to its end.
	Duration time.Duration
	// FirstByte runs from the attempt's start to the first body byte
	// written to the client; 0 when none was.
	FirstByte time.Duration
	// Attempts is the number of attempts of this leg, this one included.
	Attempts int
	// Usage is the usage the response reported, nil when it reported none.
	Usage *Usage
}

// Hooks are optional callbacks of a call; they are called synchronously on
// the calling goroutine and must not block.
type Hooks struct {
	// OnAttempt is called before each attempt, attempt counting from 1
	// within its leg (prefill attempts, then decode attempts).
	OnAttempt func(t Target, attempt int)
	// OnRequest is called with each outgoing request before it is sent; it
	// may add headers (inject trace context). It must not touch the body.
	OnRequest func(t Target, req *http.Request)
	// OnRetry is called when an attempt failed before any byte reached the
	// client, whether or not another target follows.
	OnRetry func(t Target, attempt int, err error)
	// OnPrefillDone is called when the prefill leg of a disaggregated call
	// ended, with the prefill pod's usage (the realised cache hit of the
	// prefill pick).
	OnPrefillDone func(t Target, res Result)
	// OnResponse is called with the client's response headers just before
	// they are written (the pod's headers already copied in); it may add
	// headers, e.g. which pod or cell answered.
	OnResponse func(t Target, h http.Header)
	// OnStatus is called, before OnResponse, with the status of the pod's
	// answer that is about to be relayed (an error answer included).
	OnStatus func(t Target, status int)
	// OnFirstByte is called when the first response byte was relayed to the
	// client (the time to first token of a stream).
	OnFirstByte func(t Target)
	// OnDone is called once per call in which an attempt was made, with the
	// target whose attempt ended the call: the one that served the client,
	// or the last one that failed.
	OnDone func(t Target, res Result)
}

// Proxy relays requests to pods over one tuned HTTP/1.1 transport. It is safe
// for concurrent use.
type Proxy struct {
	cfg       Config
	scheme    string // "http" or "https"
	transport *http.Transport
	bufs      sync.Pool // *[]byte of cfg.BufferSize

	// The watch of frozen targets (see watch.go); bounds and live are nil
	// when it is disabled, ej never.
	bounds  *firstByteBounds
	live    *liveness
	ej      *Ejector
	readmit *readmitter
	stats   watchCounters
}

// New returns a Proxy for cfg.
func New(cfg Config) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAlive: 30 * time.Second}
	t := &http.Transport{
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     false,
		TLSNextProto:          map[string]func(string, *tls.Conn) http.RoundTripper{}, // no HTTP/2
		MaxIdleConns:          0,                                                      // no global cap; per host below
		MaxIdleConnsPerHost:   cfg.MaxIdleConnsPerHost,
		IdleConnTimeout:       cfg.IdleConnTimeout,
		ResponseHeaderTimeout: cfg.ResponseHeaderTimeout,
		DisableCompression:    true, // relay bytes as the pod sent them; never gzip a stream
		WriteBufferSize:       64 << 10,
		ReadBufferSize:        32 << 10,
		TLSClientConfig:       cfg.TLS,
	}
	p := &Proxy{cfg: cfg, transport: t, scheme: "http"}
	if cfg.TLS != nil {
		p.scheme = "https"
	}
	p.ej = NewEjector(cfg.Watch.Ejection, nil)
	p.readmit = &readmitter{p: p}
	if cfg.Watch.FirstByteTimeout > 0 {
		p.bounds = newFirstByteBounds(cfg.Watch)
		if cfg.Watch.LivenessPath != "" {
			p.live = newLiveness(p, cfg.Watch)
		}
	}
	p.bufs.New = func() any {
		b := make([]byte, cfg.BufferSize)
		return &b
	}
	return p, nil
}

// Close closes the idle connections to pods and waits for the liveness
// checks in flight (each bounded by WatchConfig.LivenessTimeout). Calls in
// flight go on.
func (p *Proxy) Close() {
	p.readmit.close()
	if p.live != nil {
		p.live.close()
	}
	p.transport.CloseIdleConnections()
}

// callContext returns the context of a call: the client's request context,
// bounded by RequestTimeout.
func (p *Proxy) callContext(parent context.Context) (context.Context, context.CancelFunc) {
	if p.cfg.RequestTimeout > 0 {
		return context.WithTimeout(parent, p.cfg.RequestTimeout)
	}
	return context.WithCancel(parent)
}
