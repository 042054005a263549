package enginesim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events/vllmpub"
)

// Pod is one simulated vLLM engine: an OpenAI-compatible HTTP server over a
// paged prefix cache, with a running-batch scheduler, a timing model and a
// KV-event publisher. Its methods are safe for concurrent use.
type Pod struct {
	cfg     Config
	id      string
	log     *slog.Logger
	tok     TextTokenizer
	words   Tokenizer // generated tokens' ids
	cache   *kvCache
	sched   *scheduler
	pub     *vllmpub.Publisher // nil when events are disabled
	handler http.Handler
	created int64 // Unix seconds, the "created" of /v1/models

	ln   net.Listener // nil without HTTPAddr
	srv  *http.Server
	host string // remote_host of prefill answers
	port int    // remote_port of prefill answers

	ctx    context.Context // ends at Close: in-flight requests stop
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup // handlers running; Add only under mu while !closed
	serveWG  sync.WaitGroup

	seq   atomic.Uint64 // response ids
	stats counters
	load  engineLoad // the running batch's blocks and adapters (/metrics)
}

// NewPod starts a pod: it opens the HTTP listener (unless Config.HTTPAddr
// is empty) and the KV-event sockets (unless Config.Events.Disabled). The
// pod serves until Close.
func NewPod(cfg Config) (*Pod, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Pod{cfg: cfg, log: log, tok: cfg.Tokenizer, words: Tokenizer{Vocab: cfg.Vocab}, sched: newScheduler(cfg.MaxRunning, cfg.Blocks), created: time.Now().Unix()}
	if p.tok == nil {
		p.tok = wordTokenizer{p.words}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	if cfg.HTTPAddr != "" {
		ln, err := net.Listen("tcp", cfg.HTTPAddr)
		if err != nil {
			p.cancel()
			return nil, fmt.Errorf("enginesim: listen %s: %w", cfg.HTTPAddr, err)
		}
		p.ln = ln
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		p.host = host
		p.port, _ = strconv.Atoi(port)
	}
	p.id = cfg.ID
	if p.id == "" {
		p.id = "enginesim"
		if p.ln != nil {
			p.id = p.ln.Addr().String()
		}
	}
	var pub publisher
	if !cfg.Events.Disabled {
		vp, err := vllmpub.New(vllmpub.Config{
			Endpoint:       cfg.Events.Endpoint,
			Connect:        cfg.Events.Connect,
			ReplayEndpoint: cfg.Events.ReplayEndpoint,
			Pod:            p.id,
			Model:          cfg.Model,
			Form:           cfg.Events.Form,
			BufferSize:     cfg.Events.BufferSize,
			Skip:           cfg.Events.Skip,
			DialTimeout:    10 * time.Second,
			Logger:         log,
		})
		if err != nil {
			p.cancel()
			if p.ln != nil {
				p.ln.Close()
			}
			return nil, fmt.Errorf("enginesim: pod %s: %w", p.id, err)
		}
		p.pub, pub = vp, vp
	}
	p.cache = newKVCache(&p.cfg, p.id, pub, log)
	p.handler = http.HandlerFunc(p.serveHTTP)
	if p.ln != nil {
		p.srv = &http.Server{
			Handler:           p.handler,
			ReadHeaderTimeout: 30 * time.Second,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		}
		p.serveWG.Add(1)
		go func() {
			defer p.serveWG.Done()
			if err := p.srv.Serve(p.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				p.log.Error("enginesim: serve", "pod", p.id, "err", err)
			}
		}()
	}
	return p, nil
}

// Close stops the pod: in-flight requests end at once (as when an engine
// dies), the listener and the KV-event sockets close, and Close waits for
// every goroutine it owns. It is idempotent.
func (p *Pod) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	var err error
	if p.srv != nil {
		err = p.srv.Close()
		p.serveWG.Wait()
	}
	p.inflight.Wait()
	if p.pub != nil {
		if e := p.pub.Close(); err == nil {
			err = e
		}
	}
	return err
}

// ID returns the pod id (the pod part of its KV-event topic).
func (p *Pod) ID() string { return p.id }

// Model returns the served model name.
func (p *Pod) Model() string { return p.cfg.Model }

// Role returns the pod's disaggregation role.
func (p *Pod) Role() Role { return p.cfg.Role }

// Config returns the pod's configuration.
func (p *Pod) Config() Config { return p.cfg }

// HTTPAddr returns the address the pod listens on ("127.0.0.1:41234"), or
// "" when it does not listen.
func (p *Pod) HTTPAddr() string {
	if p.ln == nil {
		return ""
	}
	return p.ln.Addr().String()
}

// URL returns "http://" + HTTPAddr(), or "" when the pod does not listen.
func (p *Pod) URL() string {
	if p.ln == nil {
		return ""
	}
	return "http://" + p.HTTPAddr()
}

// ZMQEndpoint returns the KV-event PUB socket's address with its real port
// ("tcp://127.0.0.1:41235"), or "" when events are disabled.
func (p *Pod) ZMQEndpoint() string {
	if p.pub == nil {
		return ""
	}
	return p.pub.Endpoint()
}

// ReplayEndpoint returns the replay socket's address, or "" without one.
func (p *Pod) ReplayEndpoint() string {
	if p.pub == nil {
		return ""
	}
	return p.pub.ReplayEndpoint()
}

// Topic returns the KV-event topic kv@<ID>@<Model>, or "" when events are
// disabled.
func (p *Pod) Topic() string {
	if p.pub == nil {
		return ""
	}
	return p.pub.Topic()
}

// EventsSubscribed reports whether a subscriber's filter matches the pod's
// topic, so that events published now are delivered (see
// vllmpub.Publisher.Subscribed).
func (p *Pod) EventsSubscribed() bool {
	return p.pub != nil && p.pub.Subscribed()
}

// CachedBlocks returns the chained hashes of every block in the pod's KV
// cache, parents before children: what an exact index should hold for it.
func (p *Pod) CachedBlocks() []blockhash.Hash { return p.cache.contents() }

// Handler returns the pod's HTTP handler, for serving it on a listener of
// your own (Config.HTTPAddr "").
func (p *Pod) Handler() http.Handler { return p.handler }

// enter registers an in-flight handler; it returns false after Close.
func (p *Pod) enter() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.inflight.Add(1)
	return true
}
