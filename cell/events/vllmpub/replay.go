package vllmpub

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/go-zeromq/zmq4"
)

// errBadRequest is wrapped by ParseReplayRequest's errors.
var errBadRequest = errors.New("vllmpub: bad replay request")

// ParseReplayRequest decodes the frames a ROUTER replay socket receives
// after the peer identity: [start_seq] from a bare DEALER, or ["", start_seq]
// from a REQ socket or a DEALER emulating one. It returns the start sequence
// number and whether the peer used the empty delimiter (replies must then
// carry it too).
func ParseReplayRequest(frames [][]byte) (start uint64, delim bool, err error) {
	switch {
	case len(frames) == 2 && len(frames[0]) == 0:
		delim = true
		frames = frames[1:]
	case len(frames) != 1:
		return 0, false, fmt.Errorf("%w: %d frames, want [\"\", seq] or [seq]", errBadRequest, len(frames))
	}
	if len(frames[0]) != 8 {
		return 0, false, fmt.Errorf("%w: start seq of %d bytes, want 8", errBadRequest, len(frames[0]))
	}
	return binary.BigEndian.Uint64(frames[0]), delim, nil
}

// serveReplay answers replay requests until the Publisher closes. Requests
// are served one at a time; the buffered entries are copied out under the
// lock (the payloads are shared: they are never modified) and sent without
// it, so publishing goes on during a replay.
func (p *Publisher) serveReplay() {
	var snap []entry
	for {
		msg, err := p.router.Recv()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			continue
		}
		if len(msg.Frames) < 2 {
			p.counters.BadRequests.Add(1)
			continue
		}
		id := msg.Frames[0]
		start, delim, err := ParseReplayRequest(msg.Frames[1:])
		if err != nil {
			p.counters.BadRequests.Add(1)
			p.log.Debug("vllmpub: ignoring replay request", "pod", p.cfg.Pod, "err", err)
			continue
		}
		p.counters.Replays.Add(1)
		p.mu.Lock()
		snap = p.ring.since(snap[:0], start)
		p.mu.Unlock()
		if err := p.sendReplay(id, delim, snap); err != nil && p.ctx.Err() == nil {
			p.log.Debug("vllmpub: replay aborted", "pod", p.cfg.Pod, "err", err)
		}
		clear(snap) // drop the payload references until the next request
	}
}

// sendReplay sends snap to the peer id, then the end marker.
func (p *Publisher) sendReplay(id []byte, delim bool, snap []entry) error {
	send := func(seq []byte, payload []byte) error {
		if delim {
			return p.router.SendMulti(zmq4.NewMsgFrom(id, nil, seq, payload))
		}
		return p.router.SendMulti(zmq4.NewMsgFrom(id, seq, payload))
	}
	for _, e := range snap {
		if err := send(vllmwire.EncodeSeq(e.seq), e.payload); err != nil {
			return err
		}
		p.counters.ReplayedBatches.Add(1)
	}
	return send(vllmwire.EncodeSeq(vllmwire.ReplayEndSeq), nil)
}
