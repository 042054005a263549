package epp

import (
	"context"
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
)

// BenchmarkProcess is the server's own cost per request (a trivial
// picker): the headers, a chat body in three frames, the pick's answer and
// the body passed back, over an in-memory stream.
func BenchmarkProcess(b *testing.B) {
	b.ReportAllocs()
	s, err := NewServer(DefaultConfig(), PickerFunc(func(ctx context.Context, r *Request) (*Result, error) {
		return &Result{Endpoints: []string{"10.0.0.1:8000", "10.0.0.2:8000"}}, nil
	}))
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(chatBody)
	third := len(body) / 3
	for b.Loop() {
		st := &memStream{ctx: context.Background(), msgs: []*extprocv3.ProcessingRequest{
			headersMsg("POST", "/v1/chat/completions", false, "authorization", "Bearer k"),
			bodyMsg(body[:third], false), bodyMsg(body[third:2*third], false), bodyMsg(body[2*third:], true),
		}}
		if err := s.Process(st); err != nil {
			b.Fatal(err)
		}
	}
}
