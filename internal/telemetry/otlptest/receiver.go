package otlptest

import (
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// Span is one received span with its resource's and its own attributes,
// every value rendered as a string.
type Span struct {
	// TraceID, SpanID and ParentID are lower-case hex; ParentID is empty
	// for a root span.
	TraceID, SpanID, ParentID string
	Name                      string
	// Kind is "server", "client", "internal", "producer" or "consumer".
	Kind string
	// Scope is the instrumentation scope's name.
	Scope      string
	Start, End time.Time
	// Error is true when the span's status is an error.
	Error bool
	// Attrs are the span's attributes; Resource its resource's.
	Attrs, Resource map[string]string
}

// Service is the span's service.name.
func (s Span) Service() string { return s.Resource["service.name"] }

// Instance is the span's service.instance.id.
func (s Span) Instance() string { return s.Resource["service.instance.id"] }

// Receiver is a running OTLP/gRPC trace receiver. It is safe for
// concurrent use.
type Receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	srv *grpc.Server
	lis net.Listener

	mu       sync.Mutex
	spans    []Span
	requests int
}

// Start starts a receiver on 127.0.0.1:0; it stops when the test ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{srv: grpc.NewServer(), lis: lis}
	collectortrace.RegisterTraceServiceServer(r.srv, r)
	done := make(chan struct{})
	go func() { defer close(done); r.srv.Serve(lis) }()
	t.Cleanup(func() { r.srv.Stop(); <-done })
	return r
}

// Endpoint is the value for OTEL_EXPORTER_OTLP_ENDPOINT.
func (r *Receiver) Endpoint() string { return "http://" + r.lis.Addr().String() }

// Export implements the collector's TraceService.
func (r *Receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		res := attrs(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				got = append(got, Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: kind(s.GetKind()),
					Scope: ss.GetScope().GetName(),
					Start: time.Unix(0, int64(s.GetStartTimeUnixNano())), End: time.Unix(0, int64(s.GetEndTimeUnixNano())),
					Error: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
					Attrs: attrs(s.GetAttributes()), Resource: res,
				})
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	r.requests++
	r.mu.Unlock()
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Spans returns every span received so far, in arrival order.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests is how many Export calls arrived.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}

// Trace returns the received spans of one trace, ordered by start time.
func (r *Receiver) Trace(traceID string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == traceID {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Start.Before(out[j].Start) })
	return out
}

// Tree renders spans (one trace) as an indented tree, children under their
// parent in start order, each line naming the span, its service and
// instance; spans whose parent is not among them are roots.
func Tree(spans []Span) string {
	byID := map[string]bool{}
	for _, s := range spans {
		byID[s.SpanID] = true
	}
	children := map[string][]Span{}
	var roots []Span
	for _, s := range spans {
		if s.ParentID == "" || !byID[s.ParentID] {
			roots = append(roots, s)
		} else {
			children[s.ParentID] = append(children[s.ParentID], s)
		}
	}
	var b strings.Builder
	var walk func(s Span, depth int)
	walk = func(s Span, depth int) {
		svc := s.Service()
		if in := s.Instance(); in != "" {
			svc += " " + in
		}
		fmt.Fprintf(&b, "%s%s  [%s, %s]\n", strings.Repeat("  ", depth), s.Name, svc, s.Kind)
		kids := children[s.SpanID]
		sort.SliceStable(kids, func(i, j int) bool { return kids[i].Start.Before(kids[j].Start) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	sort.SliceStable(roots, func(i, j int) bool { return roots[i].Start.Before(roots[j].Start) })
	for _, s := range roots {
		walk(s, 0)
	}
	return b.String()
}

func kind(k tracepb.Span_SpanKind) string {
	switch k {
	case tracepb.Span_SPAN_KIND_SERVER:
		return "server"
	case tracepb.Span_SPAN_KIND_CLIENT:
		return "client"
	case tracepb.Span_SPAN_KIND_PRODUCER:
		return "producer"
	case tracepb.Span_SPAN_KIND_CONSUMER:
		return "consumer"
	}
	return "internal"
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

// value renders an attribute value: scalars as Go prints them, arrays as
// [a b], maps as {k=v}.
func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return fmt.Sprint(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return fmt.Sprint(x.IntValue)
	case *commonpb.AnyValue_DoubleValue:
		return fmt.Sprint(x.DoubleValue)
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	case *commonpb.AnyValue_ArrayValue:
		parts := make([]string, len(x.ArrayValue.GetValues()))
		for i, e := range x.ArrayValue.GetValues() {
			parts[i] = value(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	case *commonpb.AnyValue_KvlistValue:
		parts := make([]string, len(x.KvlistValue.GetValues()))
		for i, kv := range x.KvlistValue.GetValues() {
			parts[i] = kv.GetKey() + "=" + value(kv.GetValue())
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return ""
}
