package natsjs

import (
	"fmt"
	"strings"
	"time"

	"github.com/cellrouter/cellrouter/cell/events/vllmwire"
	"github.com/nats-io/nats.go"
)

// Config configures a Consumer. Start from DefaultConfig.
type Config struct {
	// URL is the NATS server URL, or a comma-separated list of them.
	// Default nats.DefaultURL (nats://127.0.0.1:4222).
	URL string

	// Name is the connection name shown by the server's monitoring.
	// Default "celld-kv-events".
	Name string

	// Stream is the JetStream stream holding the events. Default "KV_EVENTS".
	Stream string

	// SubjectPrefix is the prefix publishers send under; the consumer
	// filters on <SubjectPrefix>.>. Default DefaultSubjectPrefix ("kv.events").
	SubjectPrefix string

	// CreateStream, when true, creates Stream if it does not exist (with
	// StreamSubjects, StreamMaxAge and StreamMaxBytes, file storage, one
	// replica); an existing stream is used as it is. When false, a missing
	// stream is an error and Run retries until an operator creates it.
	// Default true.
	CreateStream bool

	// StreamSubjects are the subjects of a stream Run creates. Default
	// [<SubjectPrefix>.>].
	StreamSubjects []string

	// StreamMaxAge is the retention of a stream Run creates: the history a
	// restarted celld replays (Replay). Zero keeps messages until
	// StreamMaxBytes. Default 1h.
	StreamMaxAge time.Duration

	// StreamMaxBytes bounds a stream Run creates; the oldest messages go
	// first. Default 1 GiB; -1 means unbounded.
	StreamMaxBytes int64

	// Durable is the durable consumer's name. It must be unique per celld
	// instance: two instances sharing one durable consumer would split the
	// messages between them. Default "celld".
	Durable string

	// Replay, when true, makes the first attach of a Consumer delete and
	// recreate the durable consumer so delivery starts at the first message
	// the stream retains: a celld process starts with an empty index and
	// rebuilds it from the history. Later attaches of the same Consumer (after
	// a connection or server failure) resume where the Consumer stopped.
	// When false, the first attach resumes too: for a Consumer that feeds an
	// index that already holds what was acknowledged. Default true.
	Replay bool

	// AckWait is how long the server waits for the acknowledgement of a
	// delivered message before delivering it again. It bounds the stall
	// after a celld died holding an unacknowledged message. Default 5s.
	AckWait time.Duration

	// MaxAckPending is the most messages delivered and not yet
	// acknowledged. With 1 (the default), the server delivers the stream in
	// order even across redeliveries, so a Kv-Seq gap always means the
	// publisher lost batches. Above 1 delivery is faster but a redelivered
	// message can arrive after later ones; see GapRetries.
	MaxAckPending int

	// MaxDeliver is how often the server delivers one message before
	// giving up on it (a sink that keeps failing). -1 means no limit.
	// Default 10.
	MaxDeliver int

	// NakDelay is how long a message the sink failed on (an error that is
	// not a drop) waits before its redelivery. Default 100ms.
	NakDelay time.Duration

	// GapRetries, used only when MaxAckPending > 1, is how many times a
	// message revealing a Kv-Seq gap is sent back (after GapDelay) for the
	// missing batches to arrive by redelivery, before the consumer gives the
	// gap up. Default 3.
	GapRetries int

	// GapDelay is the redelivery delay of a message sent back for a gap
	// (MaxAckPending > 1). Default 1s.
	GapDelay time.Duration

	// PullBatch is how many messages the client asks for per pull request.
	// Default 256.
	PullBatch int

	// ReadyPoll is how often Run checks, until it is ready, whether the
	// consumer has caught up with the stream. Default 500ms.
	ReadyPoll time.Duration

	// RetryBackoff is how long Run waits after a failed attach (no server,
	// no stream, consumer deleted) before trying again. Default 1s.
	RetryBackoff time.Duration

	// LogEvery is the least time between two log lines about dropped
	// messages; drops in between are counted and summarised. Default 1s.
	LogEvery time.Duration

	// Limits bound the payload decoder.
	Limits vllmwire.Limits
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		URL:            nats.DefaultURL,
		Name:           "celld-kv-events",
		Stream:         "KV_EVENTS",
		SubjectPrefix:  DefaultSubjectPrefix,
		CreateStream:   true,
		StreamMaxAge:   time.Hour,
		StreamMaxBytes: 1 << 30,
		Durable:        "celld",
		Replay:         true,
		AckWait:        5 * time.Second,
		MaxAckPending:  1,
		MaxDeliver:     10,
		NakDelay:       100 * time.Millisecond,
		GapRetries:     3,
		GapDelay:       time.Second,
		PullBatch:      256,
		ReadyPoll:      500 * time.Millisecond,
		RetryBackoff:   time.Second,
		LogEvery:       time.Second,
		Limits:         vllmwire.DefaultLimits(),
	}
}

// Validate returns an error naming the first invalid field and its value.
func (c Config) Validate() error {
	switch {
	case strings.TrimSpace(c.URL) == "":
		return fmt.Errorf("natsjs: Config.URL is empty")
	case !validName(c.Stream):
		return fmt.Errorf("natsjs: Config.Stream %q must be non-empty without '.', '*', '>', '/', '\\\\' or spaces", c.Stream)
	case !validPrefix(c.SubjectPrefix):
		return fmt.Errorf("natsjs: Config.SubjectPrefix %q must be dot-separated non-empty tokens without wildcards or spaces", c.SubjectPrefix)
	case !validName(c.Durable):
		return fmt.Errorf("natsjs: Config.Durable %q must be non-empty without '.', '*', '>', '/', '\\\\' or spaces", c.Durable)
	case c.StreamMaxAge < 0:
		return fmt.Errorf("natsjs: Config.StreamMaxAge %v is negative", c.StreamMaxAge)
	case c.StreamMaxBytes == 0 || c.StreamMaxBytes < -1:
		return fmt.Errorf("natsjs: Config.StreamMaxBytes %d must be positive or -1", c.StreamMaxBytes)
	case c.AckWait < time.Millisecond:
		return fmt.Errorf("natsjs: Config.AckWait %v must be at least 1ms", c.AckWait)
	case c.MaxAckPending < 1:
		return fmt.Errorf("natsjs: Config.MaxAckPending %d must be at least 1", c.MaxAckPending)
	case c.MaxDeliver == 0 || c.MaxDeliver < -1:
		return fmt.Errorf("natsjs: Config.MaxDeliver %d must be positive or -1", c.MaxDeliver)
	case c.NakDelay < 0:
		return fmt.Errorf("natsjs: Config.NakDelay %v is negative", c.NakDelay)
	case c.GapRetries < 0:
		return fmt.Errorf("natsjs: Config.GapRetries %d is negative", c.GapRetries)
	case c.GapDelay < 0:
		return fmt.Errorf("natsjs: Config.GapDelay %v is negative", c.GapDelay)
	case c.PullBatch < 1:
		return fmt.Errorf("natsjs: Config.PullBatch %d must be at least 1", c.PullBatch)
	case c.ReadyPoll <= 0:
		return fmt.Errorf("natsjs: Config.ReadyPoll %v must be positive", c.ReadyPoll)
	case c.RetryBackoff <= 0:
		return fmt.Errorf("natsjs: Config.RetryBackoff %v must be positive", c.RetryBackoff)
	case c.LogEvery < 0:
		return fmt.Errorf("natsjs: Config.LogEvery %v is negative", c.LogEvery)
	}
	for i, s := range c.StreamSubjects {
		if !validSubject(s) {
			return fmt.Errorf("natsjs: Config.StreamSubjects[%d] %q is not a valid subject", i, s)
		}
	}
	if err := c.Limits.Validate(); err != nil {
		return fmt.Errorf("natsjs: Config.Limits: %w", err)
	}
	return nil
}

// filterSubject is the subject the consumer filters on.
func (c Config) filterSubject() string { return c.SubjectPrefix + ".>" }

// streamSubjects are the subjects of a stream Run creates.
func (c Config) streamSubjects() []string {
	if len(c.StreamSubjects) > 0 {
		return c.StreamSubjects
	}
	return []string{c.filterSubject()}
}

// validName reports whether s is a valid stream or consumer name.
func validName(s string) bool {
	return s != "" && !strings.ContainsAny(s, ".*>/\\ \t\r\n")
}

// validPrefix reports whether s is a literal subject (no wildcards).
func validPrefix(s string) bool {
	if !validSubject(s) {
		return false
	}
	for _, t := range strings.Split(s, ".") {
		if t == "*" || t == ">" {
			return false
		}
	}
	return true
}

// validSubject reports whether s is dot-separated non-empty tokens without
// whitespace, where '>' may only be the last token.
func validSubject(s string) bool {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return false
	}
	toks := strings.Split(s, ".")
	for i, t := range toks {
		if t == "" || (t == ">" && i != len(toks)-1) {
			return false
		}
		if len(t) > 1 && strings.ContainsAny(t, "*>") {
			return false
		}
	}
	return true
}
