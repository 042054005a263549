package zmqsub

import (
	"context"
	"sync"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// worker is the goroutine that applies one pod's messages from the Bind
// socket, in order, with its own stream: a replay it runs (a gap, a catch-up)
// holds up that pod's queue only.
type worker struct {
	queue chan [][]byte
}

// runBind receives from the Bind socket until ctx ends. Publishers come and
// go on it; a restarted one is recognised by its sequence numbers. Each
// message goes to its pod's worker, named by the topic; a message whose
// topic names no pod is dropped and counted, and so is one whose worker's
// queue is full (the gap it leaves is repaired by replay, like any lost
// message). The workers stop after the socket, once their queues are
// drained (applying nothing once ctx has ended).
func (l *loop) runBind(ctx context.Context, sock zmq4.Socket) {
	defer sock.Close()
	l.connected.Store(true)
	defer l.connected.Store(false)
	l.s.firstAttemptDone()

	workers := make(map[string]*worker)
	var wg sync.WaitGroup
	defer func() {
		for _, w := range workers {
			close(w.queue)
		}
		wg.Wait()
	}()
	for ctx.Err() == nil {
		msg, err := sock.Recv()
		if err != nil {
			if ctx.Err() == nil {
				// A publisher's connection ended; the others go on.
				l.s.counters.Disconnects.Add(1)
			}
			continue
		}
		l.s.counters.Messages.Add(1)
		if len(msg.Frames) != 3 {
			l.s.decodeError(vllmwire.FrameCountError(len(msg.Frames)), l.addr)
			continue
		}
		pod, _, ok := vllmwire.SplitTopic(msg.Frames[0], l.s.cfg.TopicPrefix)
		if !ok {
			l.s.topicDrop(msg.Frames[0], l.addr)
			continue
		}
		w := workers[string(pod)]
		if w == nil {
			if !l.s.knownPod(pod) {
				l.s.unknownPodDrop(pod, l.addr)
				continue
			}
			if len(workers) >= maxHolders {
				l.s.drop("publishers", "zmqsub: too many publishers on the bind socket; message dropped", "pod", string(pod), "limit", maxHolders)
				continue
			}
			w = &worker{queue: make(chan [][]byte, l.s.cfg.QueueDepth)}
			workers[string(pod)] = w
			wg.Add(1)
			go func() {
				defer wg.Done()
				l.runWorker(ctx, w)
			}()
		}
		select {
		case w.queue <- msg.Frames:
		default:
			l.s.drop("queue_full", "zmqsub: a publisher's queue is full (its replay is slow?); message dropped", "pod", string(pod), "depth", l.s.cfg.QueueDepth)
		}
	}
}

// runWorker applies one pod's messages until its queue is closed.
func (l *loop) runWorker(ctx context.Context, w *worker) {
	st := newStream(l.s, Endpoint{}, true, &l.nholders)
	b := &st.live
	for frames := range w.queue {
		if ctx.Err() != nil {
			continue // drain
		}
		if err := vllmwire.DecodeFrames(frames, b, l.s.cfg.Limits); err != nil {
			l.s.decodeError(err, l.addr)
			continue
		}
		pod, model, _ := vllmwire.SplitTopic(frames[0], l.s.cfg.TopicPrefix)
		vllmwire.SetString(&b.Pod, pod)
		vllmwire.SetString(&b.Model, model)
		st.handle(ctx, b)
	}
}
