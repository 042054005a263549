package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/internal/pause"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Consumer feeds a Sink from a JetStream stream through a durable pull
// consumer. Messages are handled one at a time, in delivery order, on the
// goroutine that called Run; a message is acknowledged only after the sink's
// ApplyBatch returned. See the package doc for the model.
type Consumer struct {
	cfg      Config
	sink     events.Sink
	rl       *rateLog
	counters *Counters

	running  atomic.Bool
	attached bool // a session attached once: later attaches resume
	pos      position

	ready     chan struct{}
	readyOnce sync.Once

	batch events.Batch // reused by handle
}

// NewConsumer returns a Consumer feeding sink. log receives the consumer's
// warnings (nil means slog.Default()). It does not connect: Run does.
func NewConsumer(cfg Config, sink events.Sink, log *slog.Logger) (*Consumer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("natsjs: nil sink")
	}
	if log == nil {
		log = slog.Default()
	}
	return &Consumer{
		cfg:      cfg,
		sink:     sink,
		rl:       newRateLog(log, cfg.LogEvery),
		counters: newCounters(),
		ready:    make(chan struct{}),
	}, nil
}

// Counters returns the Consumer's counters.
func (c *Consumer) Counters() *Counters { return c.counters }

// Ready returns a channel closed once the consumer is attached and has
// caught up with the messages the stream held for it at attach time (for
// /readyz). It stays closed after that, through reconnects.
func (c *Consumer) Ready() <-chan struct{} { return c.ready }

// markReady closes the Ready channel once.
func (c *Consumer) markReady() { c.readyOnce.Do(func() { close(c.ready) }) }

// isReady reports whether Ready is closed.
func (c *Consumer) isReady() bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// noteProgress marks the consumer ready when a handled message was the last
// one pending for the consumer.
func (c *Consumer) noteProgress(md *jetstream.MsgMetadata) {
	if md != nil && md.NumPending == 0 {
		c.markReady()
	}
}

// Run connects, attaches to the stream and feeds the sink until ctx ends;
// it returns nil then, after its goroutines stopped and the messages it
// received but did not handle were sent back (Nak) for the next instance.
// When attaching fails or the attachment breaks (no server, no stream, the
// consumer deleted), Run logs at a bounded rate, waits RetryBackoff and
// attaches again, resuming where it stopped. Run must not be called
// concurrently with itself; a Consumer may be Run again after Run returned,
// and then resumes.
func (c *Consumer) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("natsjs: Run called while running")
	}
	defer c.running.Store(false)
	for {
		err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		c.counters.AttachErrors.Add(1)
		c.rl.warn("natsjs: consumer detached; retrying", "stream", c.cfg.Stream,
			"durable", c.cfg.Durable, "retry_in", c.cfg.RetryBackoff, "err", err)
		if !pause.Sleep(ctx, c.cfg.RetryBackoff) {
			return nil
		}
	}
}

// session is one attachment: connect, ensure the stream and the consumer,
// consume until ctx ends (nil) or the attachment breaks (the error).
func (c *Consumer) session(ctx context.Context) error {
	nc, err := nats.Connect(c.cfg.URL, nats.Name(c.cfg.Name), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("natsjs: connect %s: %w", c.cfg.URL, err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("natsjs: jetstream: %w", err)
	}
	if err := c.ensureStream(ctx, js); err != nil {
		return err
	}
	cons, err := c.ensureConsumer(ctx, js)
	if err != nil {
		return err
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(c.cfg.PullBatch))
	if err != nil {
		return fmt.Errorf("natsjs: consume %s/%s: %w", c.cfg.Stream, c.cfg.Durable, err)
	}
	c.attached = true
	c.counters.Attaches.Add(1)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.watchReady(ctx, cons, stop)
	}()
	err = c.consume(ctx, it)
	close(stop)
	wg.Wait()
	// The last acknowledgements are buffered in the connection: send them
	// before it closes.
	_ = nc.FlushTimeout(time.Second)
	return err
}

// consume handles messages until ctx ends or the iterator fails.
func (c *Consumer) consume(ctx context.Context, it jetstream.MessagesContext) error {
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				c.sendBack(it)
				return nil
			}
			it.Stop()
			return fmt.Errorf("natsjs: next message: %w", err)
		}
		c.handle(ctx, msg)
	}
}

// sendBack drains the iterator and naks the messages it still buffered, so
// the server redelivers them at once instead of after AckWait.
func (c *Consumer) sendBack(it jetstream.MessagesContext) {
	it.Drain()
	for {
		msg, err := it.Next(jetstream.NextMaxWait(time.Second))
		if err != nil {
			return
		}
		c.counters.Messages.Add(1)
		c.nak(msg, 0)
	}
}

// watchReady marks the consumer ready when the server says nothing is
// pending for it, checking at once and then every ReadyPoll until ready,
// ctx ends or stop is closed.
func (c *Consumer) watchReady(ctx context.Context, cons jetstream.Consumer, stop <-chan struct{}) {
	t := time.NewTicker(c.cfg.ReadyPoll)
	defer t.Stop()
	for !c.isReady() {
		info, err := cons.Info(ctx)
		if err == nil && info.NumPending == 0 && info.NumAckPending == 0 {
			c.markReady()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-t.C:
		}
	}
}
