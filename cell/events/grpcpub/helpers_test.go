package grpcpub

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// testTimeout bounds every exchange with the test server; generous for a
// loaded machine.
const testTimeout = 30 * time.Second

// validRequest returns a valid request of pod with the given event_id: a
// BlockStored of two 4-token blocks, a BlockRemoved and an AllBlocksCleared.
func validRequest(pod string, id uint64) *eventsv1.PublishRequest {
	base := uint32(id * 100)
	return &eventsv1.PublishRequest{
		Pod:     pod,
		Model:   "llama",
		EventId: id,
		Ts:      1700000000.5,
		Events: []*eventsv1.KVEvent{
			{Event: &eventsv1.KVEvent_BlockStored{BlockStored: &eventsv1.BlockStored{
				BlockHashes:     []uint64{10 + id, 11 + id},
				ParentBlockHash: proto.Uint64(9),
				TokenIds:        []uint32{base, base + 1, base + 2, base + 3, base + 4, base + 5, base + 6, base + 7},
				BlockSize:       4,
				LoraName:        "adapter",
				Medium:          "GPU",
				ExtraKeys:       []string{"", "mm:abc"},
				GroupIdx:        1,
				SlidingWindow:   128,
			}}},
			{Event: &eventsv1.KVEvent_BlockRemoved{BlockRemoved: &eventsv1.BlockRemoved{
				BlockHashes: []uint64{3, 4},
				Medium:      "CPU",
			}}},
			{Event: &eventsv1.KVEvent_AllBlocksCleared{AllBlocksCleared: &eventsv1.AllBlocksCleared{}}},
		},
	}
}

// recordingSink keeps deep copies of the batches it is given and fails the
// ones fail says to fail.
type recordingSink struct {
	mu      sync.Mutex
	batches []events.Batch
	fail    func(b *events.Batch) error
}

// ApplyBatch implements events.Sink.
func (r *recordingSink) ApplyBatch(_ context.Context, b *events.Batch) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		if err := r.fail(b); err != nil {
			return err
		}
	}
	c := *b
	c.Events = make([]events.Event, len(b.Events))
	for i, e := range b.Events {
		e.BlockHashes = slices.Clone(e.BlockHashes)
		e.TokenIDs = slices.Clone(e.TokenIDs)
		e.ExtraKeys = cloneKeys(e.ExtraKeys)
		c.Events[i] = e
	}
	r.batches = append(r.batches, c)
	return nil
}

// seqs returns the Seq of every recorded batch of holder, in order.
func (r *recordingSink) seqs(holder string) []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []uint64
	for _, b := range r.batches {
		if b.Holder() == holder {
			out = append(out, b.Seq)
		}
	}
	return out
}

// all returns the recorded batches.
func (r *recordingSink) all() []events.Batch {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.batches)
}

// startServer serves a Server over sink on 127.0.0.1:0 and returns a client
// connected to it. Everything stops when the test ends.
func startServer(t *testing.T, sink events.Sink, cfg Config) (eventsv1.EventPublisherClient, *Server) {
	t.Helper()
	srv, err := NewServer(sink, cfg)
	if err != nil {
		t.Fatalf("NewServer: %v", err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	gs := grpc.NewServer()
	eventsv1.RegisterEventPublisherServer(gs, srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(lis)
	}()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() {
		conn.Close()
		gs.Stop()
		<-done
	})
	return eventsv1.NewEventPublisherClient(conn), srv
}

// testStream is one client stream with a deadline.
type testStream struct {
	t      *testing.T
	stream grpc.BidiStreamingClient[eventsv1.PublishRequest, eventsv1.PublishResponse]
}

// openStream opens a Publish stream that ends with the test or after
// testTimeout.
func openStream(t *testing.T, c eventsv1.EventPublisherClient) *testStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	st, err := c.Publish(ctx)
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	return &testStream{t: t, stream: st}
}

// send sends req and returns the response to it.
func (s *testStream) send(req *eventsv1.PublishRequest) *eventsv1.PublishResponse {
	s.t.Helper()
	if err := s.stream.Send(req); err != nil {
		s.t.Fatalf("Send(event_id %d): %v", req.GetEventId(), err)
	}
	resp, err := s.stream.Recv()
	if err != nil {
		s.t.Fatalf("Recv(event_id %d): %v", req.GetEventId(), err)
	}
	return resp
}

// close ends the client side and waits for the server to end the stream.
func (s *testStream) close() {
	s.t.Helper()
	if err := s.stream.CloseSend(); err != nil {
		s.t.Fatalf("CloseSend: %v", err)
	}
	if _, err := s.stream.Recv(); err == nil {
		s.t.Fatal("Recv after CloseSend: got a response, want end of stream")
	}
}

// respSummary is the comparable part of a response.
type respSummary struct {
	Status     eventsv1.PublishStatus
	Acked      int64 // -1 when absent
	ResendFrom int64 // -1 when absent
	Reason     string
}

// summarize reduces a response to a respSummary.
func summarize(r *eventsv1.PublishResponse) respSummary {
	s := respSummary{Status: r.GetStatus(), Acked: -1, ResendFrom: -1, Reason: r.GetReason()}
	if r.AckedEventId != nil {
		s.Acked = int64(*r.AckedEventId)
	}
	if r.ResendFrom != nil {
		s.ResendFrom = int64(*r.ResendFrom)
	}
	return s
}

// applied is the summary of an applied request acknowledging id.
func applied(id int64) respSummary {
	return respSummary{Status: eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED, Acked: id, ResendFrom: -1}
}

// cloneKeys deep-copies extra keys.
func cloneKeys(keys []events.BlockKeys) []events.BlockKeys {
	if keys == nil {
		return nil
	}
	out := make([]events.BlockKeys, len(keys))
	for i, k := range keys {
		out[i] = slices.Clone(k)
	}
	return out
}
