package zmqsub

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// Sink is what a Subscriber feeds: the events.Sink every transport feeds,
// plus GiveUp to abandon a gap no replay can repair (the holder is cleared
// and its next batch is a new baseline), and ResetHolder to forget a
// publisher's blocks before replaying them under another model.
// *events.Applier implements it.
type Sink interface {
	events.Sink
	GiveUp(holderID string) bool
	ResetHolder(pod string, rank int) bool
}

var _ Sink = (*events.Applier)(nil)

// countersSink is implemented by sinks whose counters the transport adds
// its replay requests to (*events.Applier).
type countersSink interface {
	Counters() *events.Counters
}

// Subscriber receives vLLM/SGLang KV events over ZMQ and feeds them to a
// Sink, repairing gaps through the publishers' replay sockets. See the
// package doc.
type Subscriber struct {
	cfg          Config
	sink         Sink
	sinkCounters *events.Counters
	log          *slog.Logger
	zlog         *log.Logger
	limiter      *rateLimiter

	counters Counters

	running  atomic.Bool
	ready    chan struct{}
	pending  atomic.Int64
	bindAddr atomic.Pointer[string]

	mu    sync.Mutex
	loops []*loop
}

// New returns a Subscriber for cfg feeding sink. Nothing is opened before
// Run.
func New(cfg Config, sink Sink) (*Subscriber, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, errors.New("zmqsub: nil sink")
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.Default()
	}
	s := &Subscriber{
		cfg:     cfg,
		sink:    sink,
		log:     lg,
		zlog:    slog.NewLogLogger(lg.Handler(), slog.LevelDebug),
		limiter: newRateLimiter(cfg.LogEvery, nil),
		ready:   make(chan struct{}),
	}
	if c, ok := sink.(countersSink); ok {
		s.sinkCounters = c.Counters()
	}
	return s, nil
}

// Counters returns the transport's counters.
func (s *Subscriber) Counters() *Counters { return &s.counters }

// Ready is closed once every socket has made its first attempt: the Bind
// socket is listening, and each endpoint has been dialed (successfully or
// not) and, when it names its Pod, caught up from its replay socket. A
// publisher that is down at start does not hold readiness back; it is
// redialed in the background. Publishers that do not name their pod are
// caught up when their first message arrives, since only its topic says
// which pod and model the replayed batches belong to.
func (s *Subscriber) Ready() <-chan struct{} { return s.ready }

// BindEndpoint returns the Bind socket's address with its real port
// ("tcp://127.0.0.1:41234"), or "" before it is bound or without Bind.
func (s *Subscriber) BindEndpoint() string {
	if p := s.bindAddr.Load(); p != nil {
		return *p
	}
	return ""
}

// EndpointStatus is the state of one socket, for the daemon's state API.
type EndpointStatus struct {
	// Endpoint is the dialed or bound address.
	Endpoint string
	// Bind is true for the Bind socket.
	Bind bool
	// Connected says whether the socket is connected (dial) or listening (bind).
	Connected bool
	// Holders is the number of publishers (pod, or pod and rank) seen.
	Holders int
}

// Status returns the state of every socket.
func (s *Subscriber) Status() []EndpointStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]EndpointStatus, len(s.loops))
	for i, l := range s.loops {
		out[i] = EndpointStatus{
			Endpoint:  l.addr,
			Bind:      l.bind,
			Connected: l.connected.Load(),
			Holders:   int(l.nholders.Load()),
		}
	}
	return out
}

// Run opens the sockets, runs one goroutine per socket and blocks until ctx
// ends and every goroutine has stopped; it then returns nil. It returns an
// error at once if the Bind address cannot be bound. Run may be called once.
func (s *Subscriber) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("zmqsub: Run called twice")
	}
	var loops []*loop
	var bindSock zmq4.Socket
	if s.cfg.Bind != "" {
		f := s.bindFilter()
		sctx := ctx
		if f != nil {
			sctx = withSourceFilter(ctx, f)
		}
		bindSock = s.newSub(sctx)
		listen := subAddr(s.cfg.Bind, f != nil)
		if f != nil && listen == s.cfg.Bind {
			bindSock.Close()
			return fmt.Errorf("zmqsub: bind %s: the source filter's transport is not available", s.cfg.Bind)
		}
		if err := bindSock.Listen(listen); err != nil {
			bindSock.Close()
			return fmt.Errorf("zmqsub: bind %s: %w", s.cfg.Bind, err)
		}
		addr := s.cfg.Bind
		if a := bindSock.Addr(); a != nil {
			addr = "tcp://" + a.String()
		}
		s.bindAddr.Store(&addr)
		loops = append(loops, newLoop(s, Endpoint{Pub: addr}, true))
	}
	for _, ep := range s.cfg.Endpoints {
		loops = append(loops, newLoop(s, ep, false))
	}
	s.mu.Lock()
	s.loops = loops
	s.mu.Unlock()
	s.pending.Store(int64(len(loops)))

	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if l.bind {
				l.runBind(ctx, bindSock)
			} else {
				l.runDial(ctx)
			}
		}()
	}
	wg.Wait()
	return nil
}

// newSub returns a SUB socket living as long as ctx, subscribed to the
// topic prefix, that dials once without retrying (loops retry themselves).
func (s *Subscriber) newSub(ctx context.Context) zmq4.Socket {
	sock := zmq4.NewSub(ctx,
		zmq4.WithLogger(s.zlog),
		zmq4.WithDialerMaxRetries(0),
		zmq4.WithDialerTimeout(s.cfg.ReconnectMax),
	)
	// Every topic: vLLM's default is the empty string, and the messages
	// whose pod cannot be told are counted and logged, not filtered out
	// unseen (see Config.TopicPrefix). Subscribing before connecting cannot
	// fail: the filter is recorded and sent on each new connection.
	_ = sock.SetOption(zmq4.OptionSubscribe, "")
	return sock
}

// firstAttemptDone counts one socket's first attempt towards Ready.
func (s *Subscriber) firstAttemptDone() {
	if s.pending.Add(-1) == 0 {
		close(s.ready)
	}
}

// decodeError counts an undecodable message and logs it at a bounded rate.
func (s *Subscriber) decodeError(err error, endpoint string) {
	reason := vllmwire.Reason(err)
	s.counters.DecodeErrors[reasonIndex(reason)].Add(1)
	if ok, suppressed := s.limiter.allow("decode:" + reason); ok {
		s.log.Warn("zmqsub: dropped undecodable message", "reason", reason, "endpoint", endpoint, "err", err, "suppressed", suppressed)
	}
}

// topicDrop counts a message dropped because its topic names no pod, and
// logs it at a bounded rate with the topic.
func (s *Subscriber) topicDrop(topic []byte, endpoint string) {
	s.counters.DecodeErrors[reasonIndex("topic")].Add(1)
	if ok, suppressed := s.limiter.allow("decode:topic"); ok {
		s.log.Warn("zmqsub: dropped a message whose topic names no pod: publish on <topic_prefix><pod>[@<model>], or list the pod with its zmq_endpoint so the cell dials it",
			"topic", string(vllmwire.ShownTopic(topic)), "topic_prefix", s.cfg.TopicPrefix, "endpoint", endpoint, "suppressed", suppressed)
	}
}

// drop counts a message dropped for reason (a DecodeReasons label) and logs
// msg at a bounded rate.
func (s *Subscriber) drop(reason, msg string, args ...any) {
	s.counters.DecodeErrors[reasonIndex(reason)].Add(1)
	s.logLimited("drop:"+reason, msg, args...)
}

// logLimited logs a warning of kind key at a bounded rate.
func (s *Subscriber) logLimited(key, msg string, args ...any) {
	if ok, suppressed := s.limiter.allow(key); ok {
		s.log.Warn(msg, append(args, "suppressed", suppressed)...)
	}
}
