package zmqsub

import "sync/atomic"

// DecodeReasons are the labels of Counters.DecodeErrors, the reasons a
// message is dropped before it reaches the sink, in index order:
// vllmwire.Reason's labels ("topic": no pod could be told from the topic),
// "queue_full" (its publisher's queue was full), "publishers" (past the
// publishers one socket tracks), "unknown_pod" (its topic names a pod
// Config.KnownPod refuses) and "other".
var DecodeReasons = [...]string{"frame_count", "bad_seq", "topic", "too_large", "unknown_tag", "bad_event", "msgpack",
	"queue_full", "publishers", "unknown_pod", "other"}

// reasonIndex returns the DecodeErrors index of a vllmwire.Reason label.
func reasonIndex(label string) int {
	for i, r := range DecodeReasons {
		if r == label {
			return i
		}
	}
	return len(DecodeReasons) - 1
}

// Counters are the transport's counters: plain atomics, safe for concurrent
// use, read by the daemon's metrics exporter. The applier counts what
// happens to batches after decoding (applied, dropped, gaps, give-ups).
type Counters struct {
	// Messages counts live messages received on every SUB socket.
	Messages atomic.Uint64
	// DecodeErrors counts messages (live or replayed) dropped before they
	// reached the sink, by DecodeReasons label.
	DecodeErrors [len(DecodeReasons)]atomic.Uint64
	// ReplaysRequested counts replays asked of publishers: gap repairs,
	// catch-ups at first contact and after a reconnection, and restarts.
	ReplaysRequested atomic.Uint64
	// ReplaysSucceeded counts replays whose stream ended with the end marker.
	ReplaysSucceeded atomic.Uint64
	// ReplaysFailed counts replays that could not connect, timed out, broke
	// off or were too long.
	ReplaysFailed atomic.Uint64
	// BatchesReplayed counts batches received in replay streams and handed
	// to the applier (which drops those it already has).
	BatchesReplayed atomic.Uint64
	// GiveUps counts gaps the transport gave up (no replay socket, or the
	// replay failed or did not cover the gap); the holder is cleared.
	GiveUps atomic.Uint64
	// Restarts counts publisher restarts the transport inferred from a
	// sequence number going backwards (the engine's seq 0 was missed).
	Restarts atomic.Uint64
	// Resumes counts holders restored from a snapshot that were caught up
	// from after the snapshot's sequence number rather than from 0.
	Resumes atomic.Uint64
	// ModelChanges counts publishers whose live topic named another model
	// than their batches had been filed under (a catch-up at connection
	// under the default model): their buffers were replayed again.
	ModelChanges atomic.Uint64
	// Connects counts successful dials of publishers (the first and every
	// reconnection); DialFailures the failed attempts.
	Connects, DialFailures atomic.Uint64
	// Disconnects counts connections lost (dial mode) or publishers gone
	// (bind mode).
	Disconnects atomic.Uint64
	// RefusedConnections counts connections to the Bind socket closed at
	// once because their source address is outside Config.AllowedSources.
	RefusedConnections atomic.Uint64
}

// DecodeErrorsTotal returns the sum of DecodeErrors.
func (c *Counters) DecodeErrorsTotal() uint64 {
	var n uint64
	for i := range c.DecodeErrors {
		n += c.DecodeErrors[i].Load()
	}
	return n
}
