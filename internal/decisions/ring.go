package decisions

import (
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
)

// Record is one routing decision as the data plane made and carried it
// out.
type Record struct {
	// ID is the request id (X-Request-Id: the client's, or one the daemon
	// made up and sent on).
	ID string
	// TraceID is the request's OpenTelemetry trace id ("" untraced).
	TraceID string
	// Time is when the request arrived.
	Time time.Time
	// Tenant names the caller's tenant ("" without keys); never its key.
	Tenant string
	// Model is the requested model.
	Model string
	// Path is the decision's path: the global tier's "summary_chat",
	// "cold_tokens"...; the cell's match source "exact", "speculative",
	// "approximate" or "none".
	Path string
	// Cell and Pod are where the request went ("" when it went nowhere;
	// the global tier knows the pod only from the probe).
	Cell, Pod string
	// MatchedBlocks is the chosen target's matched prefix in blocks; Blocks
	// the request's.
	MatchedBlocks, Blocks int
	// Status is the HTTP status the client got.
	Status int
	// Decision is the time the decision took; Duration the whole request's.
	Decision, Duration time.Duration
	// Explanation is the decision's explanation, cut to the top K
	// candidates (a *cellv1.Explanation or a *globalv1.Explanation); nil
	// when none was captured.
	Explanation proto.Message
}

// Ring is a bounded ring of recent records. A nil *Ring is a disabled
// ring: Add does nothing, Recent returns nil, Get finds nothing.
type Ring struct {
	topK int

	mu   sync.Mutex
	buf  []Record
	next int // where the next record goes
	full bool
}

// New returns a ring for c, or nil when c.Size is 0.
func New(c Config) *Ring {
	if c.Size <= 0 {
		return nil
	}
	return &Ring{topK: max(1, c.TopK), buf: make([]Record, c.Size)}
}

// TopK returns how many candidates a record's explanation keeps (0 for a
// nil ring).
func (r *Ring) TopK() int {
	if r == nil {
		return 0
	}
	return r.topK
}

// Add records rec, dropping the oldest record of a full ring. The ring
// takes rec.Explanation over: the caller must not modify it afterwards.
func (r *Ring) Add(rec Record) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.buf[r.next] = rec
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Recent returns the records, newest first.
func (r *Ring) Recent() []Record {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	out := make([]Record, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// Get returns the newest record with id.
func (r *Ring) Get(id string) (Record, bool) {
	if r == nil || id == "" {
		return Record{}, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	for i := 1; i <= n; i++ {
		if rec := &r.buf[(r.next-i+len(r.buf))%len(r.buf)]; rec.ID == id {
			return *rec, true
		}
	}
	return Record{}, false
}
