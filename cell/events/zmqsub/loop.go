package zmqsub

import (
	"context"
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/internal/pause"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// maxHolders bounds the publishers one socket tracks sequence state for,
// against a publisher inventing topics; batches of further holders are
// still applied, without restart detection and catch-up.
const maxHolders = 4096

// loop is one socket and the goroutine that owns it: it receives, decodes
// and applies every message of the socket, and runs the replays they call
// for, in order. Only that goroutine touches its fields but connected and
// nholders.
type loop struct {
	s    *Subscriber
	ep   Endpoint
	addr string
	bind bool

	// gen counts connections (dial mode); a holder first seen in an older
	// generation is caught up again when it next speaks.
	gen     uint64
	holders map[holderKey]*holderState
	live    events.Batch // the batch live messages decode into
	rb      events.Batch // the batch replayed messages decode into

	connected atomic.Bool
	nholders  atomic.Int64
}

// newLoop returns the loop of ep (dial mode) or of the Bind socket at
// ep.Pub (bind mode).
func newLoop(s *Subscriber, ep Endpoint, bind bool) *loop {
	return &loop{s: s, ep: ep, addr: ep.Pub, bind: bind, holders: make(map[holderKey]*holderState)}
}

// runBind receives from the Bind socket until ctx ends. Publishers come and
// go on it; a restarted one is recognised by its sequence numbers.
func (l *loop) runBind(ctx context.Context, sock zmq4.Socket) {
	defer sock.Close()
	l.gen = 1
	l.connected.Store(true)
	defer l.connected.Store(false)
	l.s.firstAttemptDone()
	for ctx.Err() == nil {
		if l.recv(ctx, sock) != nil && ctx.Err() == nil {
			// A publisher's connection ended; the others go on.
			l.s.counters.Disconnects.Add(1)
		}
	}
}

// runDial dials the endpoint, receives until the connection is lost, and
// dials again with exponential backoff, until ctx ends. Each connection is
// a new generation: the publisher may have restarted meanwhile, so each
// holder is caught up again (from seq 0) when it next speaks, or at once
// when the endpoint names its pod.
func (l *loop) runDial(ctx context.Context) {
	cfg := &l.s.cfg
	backoff := cfg.ReconnectMin
	first := true
	defer func() {
		if first {
			l.s.firstAttemptDone()
		}
	}()
	for ctx.Err() == nil {
		sock := l.s.newSub(ctx)
		if err := sock.Dial(subAddr(l.ep.Pub)); err != nil {
			sock.Close()
			l.s.counters.DialFailures.Add(1)
			l.s.logLimited("dial:"+l.ep.Pub, "zmqsub: cannot reach publisher", "endpoint", l.ep.Pub, "err", err, "retry_in", backoff)
			if first {
				first = false
				l.s.firstAttemptDone()
			}
			if !pause.Sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, cfg.ReconnectMax)
			continue
		}
		backoff = cfg.ReconnectMin
		l.s.counters.Connects.Add(1)
		l.gen++
		l.connected.Store(true)
		if l.ep.Pod != "" && l.ep.Replay != "" {
			l.catchUpEndpoint(ctx)
		}
		if first {
			first = false
			l.s.firstAttemptDone()
		}
		for ctx.Err() == nil && l.recv(ctx, sock) == nil {
		}
		sock.Close()
		l.connected.Store(false)
		if ctx.Err() == nil {
			l.s.counters.Disconnects.Add(1)
			l.s.logLimited("lost:"+l.ep.Pub, "zmqsub: lost publisher, redialing", "endpoint", l.ep.Pub)
		}
	}
}

// recv receives, decodes and handles one message. It returns the socket's
// error (ctx ended, or a connection was lost); decode errors are counted
// and logged, and the message dropped.
func (l *loop) recv(ctx context.Context, sock zmq4.Socket) error {
	msg, err := sock.Recv()
	if err != nil {
		return err
	}
	l.s.counters.Messages.Add(1)
	if err := vllmwire.DecodeMessage(msg.Frames, &l.live, l.s.cfg.Limits); err != nil {
		l.s.decodeError(err, l.addr)
		return nil
	}
	l.handle(ctx, &l.live)
	return nil
}
