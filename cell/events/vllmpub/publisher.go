package vllmpub

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/internal/pause"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// ErrClosed is returned by Publish after Close.
var ErrClosed = errors.New("vllmpub: publisher closed")

// dialRetry is the pause between two attempts to reach a subscriber.
const dialRetry = 50 * time.Millisecond

// Publisher publishes KV-event batches the way a vLLM engine does. See the
// package doc for the protocol and the concurrency rules.
type Publisher struct {
	cfg   Config
	log   *slog.Logger
	topic []byte

	ctx    context.Context
	cancel context.CancelFunc
	pub    zmq4.Socket
	router zmq4.Socket // nil without a replay endpoint
	wg     sync.WaitGroup

	mu      sync.Mutex // orders numbering, buffering and sending
	next    uint64
	ring    *ring
	scratch []byte
	closed  bool

	// seen is set whenever Subscribed finds a subscription, so that the
	// dial supervisor knows of one it did not sample itself.
	seen atomic.Bool

	counters Counters
}

// Counters count what a Publisher did; all fields are atomic.
type Counters struct {
	// Published counts batches numbered (sent or skipped).
	Published atomic.Uint64
	// Skipped counts batches numbered and buffered but not sent (Config.Skip).
	Skipped atomic.Uint64
	// SendErrors counts batches the PUB socket refused.
	SendErrors atomic.Uint64
	// Replays counts replay requests served.
	Replays atomic.Uint64
	// ReplayedBatches counts batches sent in replay streams.
	ReplayedBatches atomic.Uint64
	// BadRequests counts malformed replay requests, ignored.
	BadRequests atomic.Uint64
	// Redials counts Connect-mode PUB sockets replaced by a fresh dial
	// (a subscriber lost, or none ever subscribed).
	Redials atomic.Uint64
}

// New starts a Publisher: it binds (or, with Config.Connect, dials) the PUB
// socket and binds the replay socket. The Publisher lives until Close.
func New(cfg Config) (*Publisher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	zlog := slog.NewLogLogger(log.Handler(), slog.LevelDebug)
	p := &Publisher{
		cfg:    cfg,
		log:    log,
		topic:  []byte(topicOf(cfg)),
		ctx:    ctx,
		cancel: cancel,
		ring:   newRing(cfg.BufferSize),
	}
	if cfg.ReplayEndpoint != "" {
		p.router = zmq4.NewRouter(ctx, zmq4.WithLogger(zlog))
		if err := p.router.Listen(cfg.ReplayEndpoint); err != nil {
			p.router.Close()
			cancel()
			return nil, fmt.Errorf("vllmpub: replay socket: %w", err)
		}
	}
	if err := p.openPub(zlog); err != nil {
		if p.router != nil {
			p.router.Close()
		}
		cancel()
		return nil, err
	}
	if p.router != nil {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serveReplay()
		}()
	}
	return p, nil
}

// openPub binds or dials the PUB socket.
func (p *Publisher) openPub(zlog *log.Logger) error {
	if !p.cfg.Connect {
		p.pub = zmq4.NewPub(p.ctx, zmq4.WithLogger(zlog))
		if err := p.pub.Listen(p.cfg.Endpoint); err != nil {
			p.pub.Close()
			return fmt.Errorf("vllmpub: pub socket: %w", err)
		}
		return nil
	}
	pub, err := p.dialPub(zlog, p.cfg.DialTimeout)
	if err != nil {
		return err
	}
	p.pub = pub
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.superviseDial(zlog)
	}()
	return nil
}

// dialPub returns a PUB socket connected to the endpoint, trying for at
// most timeout (0: until Close).
func (p *Publisher) dialPub(zlog *log.Logger, timeout time.Duration) (zmq4.Socket, error) {
	dctx, dcancel := context.WithCancel(p.ctx)
	pub := zmq4.NewPub(dctx,
		zmq4.WithLogger(zlog),
		zmq4.WithDialerRetry(dialRetry),
		zmq4.WithDialerMaxRetries(-1),
	)
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, dcancel)
	}
	err := pub.Dial(p.cfg.Endpoint)
	if timer != nil && !timer.Stop() && err == nil {
		err = context.DeadlineExceeded
	}
	if err != nil {
		pub.Close()
		dcancel()
		return nil, fmt.Errorf("vllmpub: pub socket: dial %s: %w", p.cfg.Endpoint, err)
	}
	// The socket's context is a child of dctx; closing the socket cancels
	// its own context, and dctx ends with the Publisher's.
	_ = dcancel
	return pub, nil
}

// superviseDial redials a Connect-mode PUB socket whose subscriber went
// away (a restarted cell). zmq4's own reconnection redials at once, which
// can reach the dying listener of the old subscriber and stay attached to
// it; this waits reconnectDelay first, as libzmq's reconnect interval does.
// A subscriber is taken as gone when the socket had a subscription and has
// had none for lostAfter consecutive checks. A socket that has had no
// subscription at all for silentAfter checks since it was dialed is
// redialed too: its peer may be such a dying listener, or the subscription
// may have come and gone between two checks.
func (p *Publisher) superviseDial(zlog *log.Logger) {
	const (
		check          = 25 * time.Millisecond
		lostAfter      = 3
		silentAfter    = 80 // 2 s
		reconnectDelay = 100 * time.Millisecond
	)
	t := time.NewTicker(check)
	defer t.Stop()
	had, missing, silent := false, 0, 0
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
		if p.Subscribed() || p.seen.Swap(false) {
			had, missing, silent = true, 0, 0
			continue
		}
		if had {
			if missing++; missing < lostAfter {
				continue
			}
		} else if silent++; silent < silentAfter {
			continue
		}
		if !pause.Sleep(p.ctx, reconnectDelay) {
			return
		}
		pub, err := p.dialPub(zlog, 0)
		if err != nil {
			return // closed meanwhile
		}
		p.mu.Lock()
		old := p.pub
		p.pub = pub
		p.mu.Unlock()
		old.Close()
		p.seen.Store(false)
		p.counters.Redials.Add(1)
		had, missing, silent = false, 0, 0
	}
}

// Endpoint returns the PUB socket's address with the real port when it was
// bound to port 0 ("tcp://127.0.0.1:41234"), or the dialed address.
func (p *Publisher) Endpoint() string {
	if p.cfg.Connect {
		return p.cfg.Endpoint
	}
	if a := p.pub.Addr(); a != nil {
		return "tcp://" + a.String()
	}
	return p.cfg.Endpoint
}

// ReplayEndpoint returns the replay socket's real address, or "" without one.
func (p *Publisher) ReplayEndpoint() string {
	if p.router == nil {
		return ""
	}
	if a := p.router.Addr(); a != nil {
		return "tcp://" + a.String()
	}
	return p.cfg.ReplayEndpoint
}

// Topic returns the topic the Publisher sends on.
func (p *Publisher) Topic() string { return string(p.topic) }

// Counters returns the Publisher's counters.
func (p *Publisher) Counters() *Counters { return &p.counters }

// Subscribed reports whether a connected subscriber's filter matches the
// topic, that is whether a batch published now would be delivered. A SUB
// socket's filter reaches the publisher shortly after it connects; batches
// published before are lost to it (the "slow joiner"), which tests avoid by
// waiting for Subscribed.
func (p *Publisher) Subscribed() bool {
	p.mu.Lock()
	pub := p.pub
	p.mu.Unlock()
	t, ok := pub.(zmq4.Topics)
	if !ok {
		return false
	}
	for _, f := range t.Topics() {
		if len(f) <= len(p.topic) && string(p.topic[:len(f)]) == f {
			p.seen.Store(true)
			return true
		}
	}
	return false
}

// NextSeq returns the sequence number the next batch will get.
func (p *Publisher) NextSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.next
}

// Buffered returns the oldest and newest sequence numbers the replay
// buffer holds, and false when it is empty.
func (p *Publisher) Buffered() (oldest, newest uint64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ring.bounds()
}

// Publish encodes b's TS, DPRank and Events in the configured form and
// publishes them as the next batch; b's Pod, Model and Seq are ignored (the
// topic and the counter are the Publisher's). It returns the batch's
// sequence number. b is not kept.
func (p *Publisher) Publish(b *events.Batch) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	payload, err := vllmwire.EncodePayload(p.scratch[:0], b, p.cfg.Form)
	if err != nil {
		return 0, fmt.Errorf("vllmpub: encode: %w", err)
	}
	p.scratch = payload[:0]
	return p.publishLocked(append([]byte(nil), payload...))
}

// PublishPayload publishes an already encoded EventBatch payload (see
// EncodePayloads) as the next batch and returns its sequence number. The
// Publisher keeps payload for replay: the caller must not modify it.
// Payloads are not checked, so tests can also send malformed ones.
func (p *Publisher) PublishPayload(payload []byte) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.publishLocked(payload)
}

// publishLocked numbers, buffers and sends payload; p.mu is held.
func (p *Publisher) publishLocked(payload []byte) (uint64, error) {
	if p.closed {
		return 0, ErrClosed
	}
	seq := p.next
	p.next++
	p.ring.push(entry{seq: seq, payload: payload})
	p.counters.Published.Add(1)
	if p.cfg.Skip != nil && p.cfg.Skip(seq) {
		p.counters.Skipped.Add(1)
		return seq, nil
	}
	if err := p.pub.SendMulti(zmq4.NewMsgFrom(p.topic, vllmwire.EncodeSeq(seq), payload)); err != nil {
		p.counters.SendErrors.Add(1)
		return seq, fmt.Errorf("vllmpub: send seq %d: %w", seq, err)
	}
	return seq, nil
}

// Close stops the replay goroutine, closes both sockets and waits. Batches
// still queued on the PUB socket may be lost, as when an engine exits.
// Close is idempotent.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.mu.Lock()
	pub := p.pub
	p.mu.Unlock()
	err := pub.Close()
	if p.router != nil {
		if e := p.router.Close(); err == nil {
			err = e
		}
	}
	p.wg.Wait()
	if p.pub != pub { // the dial supervisor swapped sockets meanwhile
		p.pub.Close()
	}
	if errors.Is(err, net.ErrClosed) {
		// A connection the peer or zmq4 had already closed: nothing lost.
		err = nil
	}
	return err
}

// topicOf returns the topic cfg publishes on.
func topicOf(cfg Config) string {
	if cfg.Topic != nil {
		return *cfg.Topic
	}
	return vllmwire.Topic(cfg.Pod, cfg.Model)
}
