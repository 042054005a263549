package zmqsub

import (
	"context"
	"sync/atomic"

	"github.com/cellrouter/cellrouter/cell/events/internal/pause"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// maxHolders bounds the publishers one socket tracks sequence state for
// (and, on the Bind socket, runs a goroutine for), against a publisher
// inventing topics. On a dial socket batches of further holders are still
// applied, without restart detection and catch-up; the Bind socket drops
// them (counted as "publishers").
const maxHolders = 4096

// loop is one socket and the goroutine that owns it. A dial socket's loop
// receives, decodes and applies every message itself, and runs the
// replays they call for, in order; the Bind socket's loop hands each
// message to its publisher's goroutine (bind.go). Only the owning goroutine
// touches its fields but connected and nholders.
type loop struct {
	s    *Subscriber
	ep   Endpoint
	addr string
	bind bool

	connected atomic.Bool
	nholders  atomic.Int64

	// admitted holds the pods a dial socket without Pod let through
	// (Config.KnownPod), so it is asked once per pod; only the socket's
	// goroutine uses it.
	admitted map[string]struct{}
}

// admit reports whether the pod a dial socket's topic names may publish,
// asking Config.KnownPod once per pod (at most maxHolders remembered).
func (l *loop) admit(pod []byte) bool {
	if l.s.cfg.KnownPod == nil {
		return true
	}
	if _, ok := l.admitted[string(pod)]; ok {
		return true
	}
	if !l.s.knownPod(pod) {
		return false
	}
	if l.admitted == nil {
		l.admitted = make(map[string]struct{})
	}
	if len(l.admitted) < maxHolders {
		l.admitted[string(pod)] = struct{}{}
	}
	return true
}

// newLoop returns the loop of ep (dial mode) or of the Bind socket at
// ep.Pub (bind mode).
func newLoop(s *Subscriber, ep Endpoint, bind bool) *loop {
	return &loop{s: s, ep: ep, addr: ep.Pub, bind: bind}
}

// runDial dials the endpoint, receives until the connection is lost, and
// dials again with exponential backoff, until ctx ends. Each connection is
// a new generation: the publisher may have restarted meanwhile, so each
// holder is caught up again (from seq 0) when it next speaks, or at once
// when the endpoint names its pod.
func (l *loop) runDial(ctx context.Context) {
	cfg := &l.s.cfg
	st := newStream(l.s, l.ep, false, &l.nholders)
	backoff := cfg.ReconnectMin
	first := true
	defer func() {
		if first {
			l.s.firstAttemptDone()
		}
	}()
	for ctx.Err() == nil {
		sock := l.s.newSub(ctx)
		if err := sock.Dial(subAddr(l.ep.Pub, false)); err != nil {
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
		st.gen++
		l.connected.Store(true)
		if l.ep.Pod != "" && l.ep.Replay != "" {
			st.catchUpEndpoint(ctx)
		}
		if first {
			first = false
			l.s.firstAttemptDone()
		}
		for ctx.Err() == nil && l.recvDial(ctx, sock, st) == nil {
		}
		sock.Close()
		l.connected.Store(false)
		if ctx.Err() == nil {
			l.s.counters.Disconnects.Add(1)
			l.s.logLimited("lost:"+l.ep.Pub, "zmqsub: lost publisher, redialing", "endpoint", l.ep.Pub)
		}
	}
}

// recvDial receives, decodes and handles one message of a dial socket. It
// returns the socket's error (ctx ended, or the connection was lost);
// messages that do not decode or name no pod are counted, logged and
// dropped.
//
// The pod is the endpoint's when it names one, whatever the topic; else
// the topic's. The model is the endpoint's, else the topic's when the topic
// has the <prefix><pod>@<model> form, else none (the sink's default).
func (l *loop) recvDial(ctx context.Context, sock zmq4.Socket, st *stream) error {
	msg, err := sock.Recv()
	if err != nil {
		return err
	}
	l.s.counters.Messages.Add(1)
	b := &st.live
	if err := vllmwire.DecodeFrames(msg.Frames, b, l.s.cfg.Limits); err != nil {
		l.s.decodeError(err, l.addr)
		return nil
	}
	pod, model, named := vllmwire.SplitTopic(msg.Frames[0], l.s.cfg.TopicPrefix)
	switch {
	case l.ep.Pod != "":
		b.Pod = l.ep.Pod
	case named && !l.admit(pod):
		l.s.unknownPodDrop(pod, l.addr)
		return nil
	case named:
		vllmwire.SetString(&b.Pod, pod)
	default:
		l.s.topicDrop(msg.Frames[0], l.addr)
		return nil
	}
	switch {
	case l.ep.Model != "":
		b.Model = l.ep.Model
	case named:
		vllmwire.SetString(&b.Model, model)
	default:
		b.Model = ""
	}
	st.stamp(b)
	st.handle(ctx, b)
	return nil
}
