package events

import "context"

// Sink consumes decoded batches: the one interface every transport feeds.
// The cell's applier implements it on top of the index.
//
// ApplyBatch applies one batch completely or not at all and returns an error
// (wrapping one of the package's sentinel errors) that says why a batch was
// dropped. It may be called concurrently for different publishers; batches of
// one publisher must be delivered in sequence order by one goroutine. The Sink
// does not keep b or its slices after it returns.
type Sink interface {
	ApplyBatch(ctx context.Context, b *Batch) error
}

// SinkFunc adapts a function to the Sink interface.
type SinkFunc func(ctx context.Context, b *Batch) error

// ApplyBatch calls f(ctx, b).
func (f SinkFunc) ApplyBatch(ctx context.Context, b *Batch) error { return f(ctx, b) }
