package grpcpub

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Limits bound what one PublishRequest may carry. They protect the cell
// from a faulty or hostile publisher; a request over a limit is dropped
// whole.
type Limits struct {
	// MaxEventsPerRequest bounds the events of one request.
	MaxEventsPerRequest int
	// MaxBlocksPerEvent bounds the block hashes of one BlockStored or
	// BlockRemoved event.
	MaxBlocksPerEvent int
	// MaxTokensPerRequest bounds the token ids of all events of a request.
	MaxTokensPerRequest int
	// MaxBlockSize bounds BlockStored.block_size, in tokens.
	MaxBlockSize int
	// MaxExtraKeysPerEvent bounds BlockStored.extra_keys.
	MaxExtraKeysPerEvent int
	// MaxStringLen bounds every string of a request (pod, model, LoRA name,
	// medium, each extra key), in bytes.
	MaxStringLen int
}

// DefaultLimits returns limits far above what engines send (vLLM batches
// are a few events of at most a few hundred blocks of 16 tokens) and below
// what would let one request pin much memory.
func DefaultLimits() Limits {
	return Limits{
		MaxEventsPerRequest:  4096,
		MaxBlocksPerEvent:    8192,
		MaxTokensPerRequest:  1 << 20,
		MaxBlockSize:         4096,
		MaxExtraKeysPerEvent: 8192,
		MaxStringLen:         1024,
	}
}

// Validate reports the first limit that is not positive.
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{
		{"MaxEventsPerRequest", l.MaxEventsPerRequest},
		{"MaxBlocksPerEvent", l.MaxBlocksPerEvent},
		{"MaxTokensPerRequest", l.MaxTokensPerRequest},
		{"MaxBlockSize", l.MaxBlockSize},
		{"MaxExtraKeysPerEvent", l.MaxExtraKeysPerEvent},
		{"MaxStringLen", l.MaxStringLen},
	} {
		if f.v <= 0 {
			return fmt.Errorf("grpcpub: Limits.%s = %d, want > 0", f.name, f.v)
		}
	}
	return nil
}

// Config configures a Server.
type Config struct {
	// Limits bound each request.
	Limits Limits
	// MaxPublishers bounds the publishers (pod, or pod and rank) the server
	// tracks; requests of further publishers are rejected. It bounds the
	// memory a misbehaving client can pin by inventing pod names.
	MaxPublishers int
	// Sequencer orders each publisher's batches; nil means a new
	// MemSequencer.
	Sequencer Sequencer
	// Authorize, when not nil, says whether the caller of a stream (its
	// context, which holds who it is) may publish for the pod a request
	// names: nil, or an error saying why not. A refused request ends its
	// stream with PermissionDenied, is counted (ReasonForbiddenPod) and
	// logged at a bounded rate. It must be safe for concurrent use.
	Authorize func(ctx context.Context, pod string) error
	// Admits, when not nil, says whether the sink accepts a pod's batches
	// at all (the cell's applier refuses pods it does not know): a request
	// for a pod it refuses is rejected (ReasonUnknownPod) before the
	// server keeps any state for it, so no invented pod takes a publisher
	// slot. It must be safe for concurrent use.
	Admits func(pod string) bool
	// Logger receives the refusals' warnings; nil logs nothing.
	Logger *slog.Logger
	// LogEvery is the shortest interval between two warnings. Default 1s.
	LogEvery time.Duration
}

// DefaultConfig returns DefaultLimits, room for 4096 publishers (16 ranks of
// each of the 256 pods a cell indexes) and an in-memory sequencer.
func DefaultConfig() Config {
	return Config{Limits: DefaultLimits(), MaxPublishers: 4096, LogEvery: time.Second}
}

// Validate reports the first bad field.
func (c Config) Validate() error {
	if err := c.Limits.Validate(); err != nil {
		return err
	}
	if c.MaxPublishers <= 0 {
		return fmt.Errorf("grpcpub: Config.MaxPublishers = %d, want > 0", c.MaxPublishers)
	}
	if c.LogEvery < 0 {
		return fmt.Errorf("grpcpub: Config.LogEvery = %v, want >= 0", c.LogEvery)
	}
	return nil
}
