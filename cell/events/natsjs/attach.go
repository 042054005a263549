package natsjs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// defaultDuplicates is the duplicate window of a stream Run creates, unless
// StreamMaxAge is shorter.
const defaultDuplicates = 2 * time.Minute

// ensureStream checks that the stream exists, creating it when
// Config.CreateStream allows. An existing stream is used as it is: its
// subjects, limits and replicas are the operator's.
func (c *Consumer) ensureStream(ctx context.Context, js jetstream.JetStream) error {
	_, err := js.Stream(ctx, c.cfg.Stream)
	if err == nil {
		return nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("natsjs: stream %s: %w", c.cfg.Stream, err)
	}
	if !c.cfg.CreateStream {
		return fmt.Errorf("natsjs: stream %s does not exist and Config.CreateStream is false", c.cfg.Stream)
	}
	dup := defaultDuplicates
	if c.cfg.StreamMaxAge > 0 && c.cfg.StreamMaxAge < dup {
		dup = c.cfg.StreamMaxAge
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name:       c.cfg.Stream,
		Subjects:   c.cfg.streamSubjects(),
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		MaxAge:     c.cfg.StreamMaxAge,
		MaxBytes:   c.cfg.StreamMaxBytes,
		Discard:    jetstream.DiscardOld,
		Duplicates: dup,
		Replicas:   1,
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("natsjs: create stream %s: %w", c.cfg.Stream, err)
	}
	return nil
}

// consumerConfig is the durable consumer's configuration: explicit acks,
// delivery of everything the stream holds when the consumer is new, and the
// configured ack wait, redelivery limit and ack-pending bound.
func (c *Consumer) consumerConfig() jetstream.ConsumerConfig {
	cc := jetstream.ConsumerConfig{
		Durable:       c.cfg.Durable,
		Description:   "cellrouter celld KV events",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.cfg.AckWait,
		MaxDeliver:    c.cfg.MaxDeliver,
		MaxAckPending: c.cfg.MaxAckPending,
		FilterSubject: c.cfg.filterSubject(),
	}
	c.deliverFrom(&cc)
	return cc
}

// ensureConsumer creates or updates the durable consumer. On the first
// attach with Config.Replay it deletes the consumer first, so delivery
// restarts at the beginning of the stream's history (or after a snapshot's
// position, ResumeAfter).
func (c *Consumer) ensureConsumer(ctx context.Context, js jetstream.JetStream) (jetstream.Consumer, error) {
	if (c.cfg.Replay || c.pos.startAfter > 0) && !c.attached {
		err := js.DeleteConsumer(ctx, c.cfg.Stream, c.cfg.Durable)
		if err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return nil, fmt.Errorf("natsjs: reset consumer %s/%s: %w", c.cfg.Stream, c.cfg.Durable, err)
		}
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, c.cfg.Stream, c.consumerConfig())
	if err != nil {
		return nil, fmt.Errorf("natsjs: consumer %s/%s: %w", c.cfg.Stream, c.cfg.Durable, err)
	}
	return cons, nil
}
