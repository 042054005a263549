package zmqsub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// Replay errors.
var (
	// ErrReplayTimeout means a replay went ReplayTimeout without a frame.
	ErrReplayTimeout = errors.New("zmqsub: replay timed out")
	// ErrReplayTooLong means a replay stream went past ReplayMaxBatches.
	ErrReplayTooLong = errors.New("zmqsub: replay stream too long")
)

// replayFrames strips what may precede [seq, payload] in a frame set a
// DEALER receives from a vLLM replay socket: the empty delimiter the
// publisher echoes (vLLM always sends it), and a topic frame some forks add
// ([topic, seq, payload]). Anything else is left for DecodeReplay to reject.
func replayFrames(frames [][]byte) [][]byte {
	if len(frames) > 0 && len(frames[0]) == 0 {
		frames = frames[1:]
	}
	if len(frames) == 3 {
		frames = frames[1:]
	}
	return frames
}

// fetchReplay asks the replay socket at endpoint for every buffered batch
// from seq from on, decodes each into b (with Pod and Model set to pod and
// model, which the stream does not carry) and calls each with it, in
// order. It returns nil when the stream ended with the end marker. A frame
// that does not decode is counted and skipped (the applier then sees a gap).
// It blocks for at most ReplayTimeout without a frame; ctx ends it sooner.
func (s *Subscriber) fetchReplay(ctx context.Context, endpoint string, from uint64, pod, model string, b *events.Batch, each func(*events.Batch)) error {
	s.counters.ReplaysRequested.Add(1)
	if c := s.sinkCounters; c != nil {
		c.ReplaysRequested.Add(1)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var timedOut atomic.Bool
	timer := time.AfterFunc(s.cfg.ReplayTimeout, func() { timedOut.Store(true); cancel() })
	defer timer.Stop()

	err := s.replayStream(rctx, endpoint, from, pod, model, b, func(b *events.Batch) {
		if !timedOut.Load() {
			timer.Reset(s.cfg.ReplayTimeout)
		}
		each(b)
	})
	if err != nil {
		if timedOut.Load() {
			err = fmt.Errorf("%w: %s from seq %d after %v without a frame", ErrReplayTimeout, endpoint, from, s.cfg.ReplayTimeout)
		}
		s.counters.ReplaysFailed.Add(1)
		return err
	}
	s.counters.ReplaysSucceeded.Add(1)
	return nil
}

// replayStream dials endpoint with a DEALER socket living as long as ctx,
// sends the request and reads the stream.
func (s *Subscriber) replayStream(ctx context.Context, endpoint string, from uint64, pod, model string, b *events.Batch, each func(*events.Batch)) error {
	dealer := zmq4.NewDealer(ctx,
		zmq4.WithLogger(s.zlog),
		zmq4.WithDialerMaxRetries(0),
		zmq4.WithDialerTimeout(s.cfg.ReplayTimeout),
	)
	defer dealer.Close()
	if err := dealer.Dial(endpoint); err != nil {
		return fmt.Errorf("zmqsub: replay %s: %w", endpoint, err)
	}
	// The empty delimiter makes the DEALER look like the REQ socket vLLM's
	// replay socket expects ([identity, "", seq] on its side).
	if err := dealer.SendMulti(zmq4.NewMsgFrom([]byte{}, vllmwire.EncodeSeq(from))); err != nil {
		return fmt.Errorf("zmqsub: replay %s: send request: %w", endpoint, err)
	}
	n := 0
	for {
		msg, err := dealer.Recv()
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return fmt.Errorf("zmqsub: replay %s: %w", endpoint, err)
		}
		done, err := vllmwire.DecodeReplay(replayFrames(msg.Frames), b, s.cfg.Limits)
		if err != nil {
			s.decodeError(err, endpoint)
			continue
		}
		if done {
			return nil
		}
		if n++; n > s.cfg.ReplayMaxBatches {
			return fmt.Errorf("%w: %s sent more than %d batches", ErrReplayTooLong, endpoint, s.cfg.ReplayMaxBatches)
		}
		if b.Pod != pod {
			b.Pod = pod
		}
		if b.Model != model {
			b.Model = model
		}
		s.counters.BatchesReplayed.Add(1)
		each(b)
	}
}
