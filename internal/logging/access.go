package logging

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/internal/edge"
)

// RequestIDHeader is the request id header: the client's, or one the
// access log makes up for a sampled request that came without (set on the
// request, so the next tier and the engine see the same id).
const RequestIDHeader = "X-Request-Id"

// The router's response headers the access log reads the outcome from.
const (
	cellHeader    = "X-Cellrouter-Cell"
	podHeader     = "X-Cellrouter-Pod"
	matchedHeader = "X-Cellrouter-Matched-Blocks"
)

// AccessConfig switches and samples the access log.
type AccessConfig struct {
	// Enabled writes an access log line at info for data-plane requests.
	Enabled bool `yaml:"enabled"`
	// Sample is the fraction of requests given a line, 0 to 1 (1: all).
	Sample float64 `yaml:"sample"`
}

// DefaultAccessConfig logs every request.
func DefaultAccessConfig() AccessConfig { return AccessConfig{Enabled: true, Sample: 1} }

// Validate checks the sample fraction.
func (c AccessConfig) Validate() error {
	if !(c.Sample >= 0 && c.Sample <= 1) { // also refuses NaN
		return fmt.Errorf("logging: access_log.sample %v: want 0 to 1", c.Sample)
	}
	return nil
}

// AccessLog writes the access lines of one tier. Its methods are safe for
// concurrent use; a nil *AccessLog logs nothing.
type AccessLog struct {
	log    *slog.Logger
	tier   string
	cell   string
	sample float64
}

// NewAccessLog returns the access log of tier ("global" or "cell") writing
// to log, or nil when c switches it off or log drops info lines. cell is
// the line's cell where the response does not name one (a cell's own id;
// "" at the global tier).
func NewAccessLog(log *slog.Logger, tier, cell string, c AccessConfig) *AccessLog {
	if !c.Enabled || c.Sample <= 0 || log == nil || !log.Enabled(context.Background(), slog.LevelInfo) {
		return nil
	}
	return &AccessLog{log: log, tier: tier, cell: cell, sample: c.Sample}
}

// Begin starts the entry of a request, timed from now. When the
// request is not sampled (or the log is off), it returns w and a nil
// Entry, whose methods do nothing. Otherwise it returns a writer that
// records the status and first byte (respond through it) and the entry;
// call End when the handler returns. ctx carries the request's span.
func (a *AccessLog) Begin(ctx context.Context, w http.ResponseWriter, r *http.Request) (http.ResponseWriter, *Entry) {
	if a == nil || (a.sample < 1 && rand.Float64() >= a.sample) {
		return w, nil
	}
	e := &Entry{a: a, start: time.Now(), endpoint: r.URL.Path}
	e.sw.ResponseWriter = w
	e.requestID = r.Header.Get(RequestIDHeader)
	if e.requestID == "" {
		e.requestID = newRequestID()
		r.Header.Set(RequestIDHeader, e.requestID)
	}
	if p, ok := edge.PrincipalFrom(r.Context()); ok && p.Tenant != nil {
		e.tenant = p.Tenant.Name
	}
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		e.traceID = sc.TraceID().String()
	}
	return &e.sw, e
}

// newRequestID returns a random request id.
func newRequestID() string {
	var b [12]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Entry is one request's access line in the making. A nil *Entry ignores
// every call. An Entry belongs to its request's handler goroutine.
type Entry struct {
	a         *AccessLog
	sw        statusWriter
	start     time.Time
	endpoint  string
	requestID string
	tenant    string
	traceID   string

	model    string
	path     string
	decision time.Duration
	blocks   int
	matched  int // -1: unknown
	cell     string
	pod      string
}

// SetModel records the request's model.
func (e *Entry) SetModel(model string) {
	if e != nil {
		e.model = model
	}
}

// SetDecision records how the tier routed the request: path is the
// decision's path (the global tier's "summary_chat", "cold_text"...; the
// cell's match source "exact", "speculative", "approximate", "none"), took
// the decision's time and blocks the prompt's blocks.
func (e *Entry) SetDecision(path string, took time.Duration, blocks int) {
	if e != nil {
		e.path, e.decision, e.blocks = path, took, blocks
	}
}

// End writes the line. Call it once, when the handler returns.
func (e *Entry) End() {
	if e == nil {
		return
	}
	h := e.sw.Header()
	cell, pod := h.Get(cellHeader), h.Get(podHeader)
	if cell == "" {
		cell = e.a.cell
	}
	matched := -1
	if n, err := strconv.Atoi(h.Get(matchedHeader)); err == nil {
		matched = n
	}
	status := e.sw.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	total := time.Since(e.start)
	firstByte := time.Duration(0)
	if !e.sw.first.IsZero() {
		firstByte = e.sw.first.Sub(e.start)
	}
	e.a.log.LogAttrs(context.Background(), slog.LevelInfo, "access",
		slog.String("tier", e.a.tier),
		slog.String("request_id", e.requestID),
		slog.String("tenant", e.tenant),
		slog.String("model", e.model),
		slog.String("endpoint", e.endpoint),
		slog.String("path", e.path),
		slog.String("cell", cell),
		slog.String("pod", pod),
		slog.Int("blocks", e.blocks),
		slog.Int("matched_blocks", matched),
		slog.Int("status", status),
		slog.Int64("bytes", e.sw.bytes),
		slog.Float64("decision_ms", ms(e.decision)),
		slog.Float64("first_byte_ms", ms(firstByte)),
		slog.Float64("total_ms", ms(total)),
		slog.String("trace_id", e.traceID),
	)
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
