package vllmpub

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
)

// EncodePayloads encodes every batch's payload in form ahead of time, so a
// load generator can publish without paying for encoding (see
// PublishPayloads).
func EncodePayloads(bs []*events.Batch, form vllmwire.Form) ([][]byte, error) {
	out := make([][]byte, len(bs))
	for i, b := range bs {
		p, err := vllmwire.EncodePayload(nil, b, form)
		if err != nil {
			return nil, fmt.Errorf("vllmpub: encode batch %d: %w", i, err)
		}
		out[i] = p
	}
	return out, nil
}

// PublishPayloads publishes payloads back to back, as fast as the socket
// takes them, and returns the sequence number of the first one and, in
// stamps (reused when its capacity allows), the time each was handed to the
// socket: the start of each batch's end-to-end latency. The payloads are
// kept for replay and must not be modified. It stops at the first error.
func (p *Publisher) PublishPayloads(payloads [][]byte, stamps []time.Time) (first uint64, _ []time.Time, err error) {
	stamps = stamps[:0]
	for i, pl := range payloads {
		seq, err := p.PublishPayload(pl)
		if err != nil {
			return first, stamps, err
		}
		if i == 0 {
			first = seq
		}
		stamps = append(stamps, time.Now())
	}
	return first, stamps, nil
}
