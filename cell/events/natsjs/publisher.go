package natsjs

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NewMsg builds the NATS message for b under prefix: subject
// <prefix>.<PodToken(b.Pod)>, the headers of the wire format with Kv-Seq =
// b.Seq, and the vLLM msgpack EventBatch of b (vllmwire.EncodePayload in
// form) as the payload. msgID, if not empty, becomes the Nats-Msg-Id header,
// which JetStream uses to drop a publish retried within its duplicate window.
func NewMsg(prefix string, b *events.Batch, form vllmwire.Form, msgID string) (*nats.Msg, error) {
	if b.Pod == "" {
		return nil, fmt.Errorf("natsjs: publish: batch has no pod")
	}
	payload, err := vllmwire.EncodePayload(nil, b, form)
	if err != nil {
		return nil, fmt.Errorf("natsjs: publish %s seq %d: %w", b.Holder(), b.Seq, err)
	}
	m := nats.NewMsg(Subject(prefix, b.Pod))
	SetHeaders(m.Header, b.Pod, b.Model, b.Seq, b.DPRank)
	if msgID != "" {
		m.Header.Set(jetstream.MsgIDHeader, msgID)
	}
	m.Data = payload
	return m, nil
}

// Publisher publishes batches to JetStream in the wire format, numbering
// them itself: Kv-Seq counts from 0 at NewPublisher, separately for each
// publisher identity (pod and data-parallel rank, events.Batch.Holder), as
// an engine's ZMQ publisher does. It waits for the stream's acknowledgement
// of each message, so a nil error means the batch is stored. Publish may be
// called concurrently; batches of one holder are numbered in call order.
type Publisher struct {
	js     jetstream.JetStream
	prefix string
	form   vllmwire.Form
	nonce  string

	mu   sync.Mutex
	next map[string]uint64
}

// NewPublisher returns a Publisher sending under subject prefix ("" means
// DefaultSubjectPrefix) with the array form of the payload.
func NewPublisher(js jetstream.JetStream, prefix string) *Publisher {
	if prefix == "" {
		prefix = DefaultSubjectPrefix
	}
	return &Publisher{
		js:     js,
		prefix: prefix,
		form:   vllmwire.FormArray,
		nonce:  strconv.FormatInt(time.Now().UnixNano(), 36) + "." + strconv.FormatUint(publisherCount.Add(1), 36),
		next:   make(map[string]uint64),
	}
}

// SetForm selects the payload layout (see vllmwire.Form); call it before
// publishing.
func (p *Publisher) SetForm(f vllmwire.Form) { p.form = f }

// Publish numbers b (it sets b.Seq to the holder's next sequence number),
// publishes it and returns the sequence number used. A failed publish still
// consumes the number: the consumer then sees a gap, which is the truth (the
// batch was lost before it was stored). The message id is unique per
// Publisher value, holder and number, so a retry of the same message inside
// JetStream's duplicate window is dropped while a restarted publisher,
// counting from 0 again, is not.
func (p *Publisher) Publish(ctx context.Context, b *events.Batch) (uint64, error) {
	holder := b.Holder()
	p.mu.Lock()
	seq := p.next[holder]
	p.next[holder] = seq + 1
	p.mu.Unlock()
	b.Seq = seq
	return seq, p.PublishAt(ctx, b)
}

// PublishAt publishes b with its own b.Seq, without numbering it: for tests
// and simulators that need to inject gaps, duplicates and restarts.
func (p *Publisher) PublishAt(ctx context.Context, b *events.Batch) error {
	id := p.nonce + "/" + b.Holder() + "/" + strconv.FormatUint(b.Seq, 10)
	m, err := NewMsg(p.prefix, b, p.form, id)
	if err != nil {
		return err
	}
	if _, err := p.js.PublishMsg(ctx, m); err != nil {
		return fmt.Errorf("natsjs: publish %s seq %d: %w", b.Holder(), b.Seq, err)
	}
	return nil
}

// publisherCount makes the message ids of Publishers created in the same
// nanosecond distinct.
var publisherCount atomic.Uint64
