package epp

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// memStream is an in-memory ExternalProcessor_ProcessServer: Recv hands
// out msgs in order, then io.EOF; Send records.
type memStream struct {
	ctx  context.Context
	msgs []*extprocv3.ProcessingRequest
	sent []*extprocv3.ProcessingResponse
}

func (m *memStream) Recv() (*extprocv3.ProcessingRequest, error) {
	if len(m.msgs) == 0 {
		return nil, io.EOF
	}
	r := m.msgs[0]
	m.msgs = m.msgs[1:]
	return r, nil
}
func (m *memStream) Send(r *extprocv3.ProcessingResponse) error {
	m.sent = append(m.sent, r)
	return nil
}
func (m *memStream) Context() context.Context     { return m.ctx }
func (m *memStream) SetHeader(metadata.MD) error  { return nil }
func (m *memStream) SendHeader(metadata.MD) error { return nil }
func (m *memStream) SetTrailer(metadata.MD)       {}
func (m *memStream) SendMsg(any) error            { return nil }
func (m *memStream) RecvMsg(any) error            { return nil }

// headersMsg is a request headers message for method and path.
func headersMsg(method, path string, end bool, extra ...string) *extprocv3.ProcessingRequest {
	hs := []*corev3.HeaderValue{{Key: ":method", RawValue: []byte(method)}, {Key: ":path", RawValue: []byte(path)}}
	for i := 0; i+1 < len(extra); i += 2 {
		hs = append(hs, &corev3.HeaderValue{Key: extra[i], RawValue: []byte(extra[i+1])})
	}
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestHeaders{
		RequestHeaders: &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{Headers: hs}, EndOfStream: end}}}
}

func bodyMsg(b []byte, end bool) *extprocv3.ProcessingRequest {
	return &extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_RequestBody{
		RequestBody: &extprocv3.HttpBody{Body: b, EndOfStream: end}}}
}

// recExchange records an exchange's calls.
type recExchange struct {
	mu       sync.Mutex
	served   []string
	statuses []int
	body     []byte
	finishes []bool
}

func (e *recExchange) Served(ep string, st int) http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.served, e.statuses = append(e.served, ep), append(e.statuses, st)
	return http.Header{"X-Test-Served": {ep}}
}
func (e *recExchange) Body(c []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body = append(e.body, c...)
}
func (e *recExchange) Finish(complete bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.finishes = append(e.finishes, complete)
}
func (e *recExchange) finished() []bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]bool(nil), e.finishes...)
}

// serve runs s on a real gRPC server on 127.0.0.1:0 and returns a client
// connection; both stop at the end of the test.
func serve(t testing.TB, s *Server, h *Health) *grpc.ClientConn {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	Register(g, s, h)
	done := make(chan struct{})
	go func() { defer close(done); g.Serve(l) }()
	cc, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close(); g.Stop(); <-done })
	return cc
}

// eventually polls cond until it holds or 10s passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
