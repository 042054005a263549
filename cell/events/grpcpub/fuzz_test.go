package grpcpub

import (
	"context"
	"errors"
	"testing"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/protobuf/proto"
)

// FuzzValidate feeds arbitrary bytes through what the server does with a
// request off the wire: protobuf decoding, validation and conversion, and
// the server's handling. Nothing may panic; a request Convert accepts must
// convert to a batch that keeps the package's promises; one it rejects must
// say why with a label.
func FuzzValidate(f *testing.F) {
	seeds := []*eventsv1.PublishRequest{
		validRequest("pod-a", 0),
		validRequest("pod-b", 1<<63),
		{Pod: "p", EventId: 3},
		{Pod: "p", DpRank: proto.Int32(3), Events: []*eventsv1.KVEvent{{}}},
		{Pod: "p", Events: []*eventsv1.KVEvent{{Event: &eventsv1.KVEvent_BlockStored{BlockStored: &eventsv1.BlockStored{
			BlockHashes: []uint64{1}, TokenIds: []uint32{1, 2}, BlockSize: 3}}}}},
	}
	bad := validRequest("pod-c", 2)
	bad.Events[0].GetBlockStored().BlockSize = 0
	seeds = append(seeds, bad)
	for _, s := range seeds {
		data, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f})

	lim := DefaultLimits()
	lim.MaxTokensPerRequest = 1 << 12
	f.Fuzz(func(t *testing.T, data []byte) {
		req := new(eventsv1.PublishRequest)
		if err := proto.Unmarshal(data, req); err != nil {
			return
		}
		var b events.Batch
		err := Convert(req, lim, &b)
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.Reason() == "" || ve.Field == "" {
				t.Fatalf("got error %v, want a *ValidationError with a reason and field", err)
			}
		} else {
			checkBatch(t, req, &b)
		}
		srv, err := NewServer(sinkDiscard, Config{Limits: lim, MaxPublishers: 4})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			resp, err := srv.Handle(context.Background(), req, &b)
			if err != nil {
				t.Fatalf("Handle: %v", err)
			}
			if resp.GetStatus() == eventsv1.PublishStatus_PUBLISH_STATUS_UNSPECIFIED {
				t.Fatal("Handle: got an unspecified status")
			}
			if resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED && resp.GetReason() == "" {
				t.Fatalf("Handle: got status %v without a reason", resp.GetStatus())
			}
		}
	})
}

// sinkDiscard is a sink that accepts every batch.
var sinkDiscard = events.SinkFunc(func(context.Context, *events.Batch) error { return nil })

// checkBatch checks the promises Convert makes about a batch.
func checkBatch(t *testing.T, req *eventsv1.PublishRequest, b *events.Batch) {
	t.Helper()
	if b.Pod == "" || b.Seq != req.GetEventId() || len(b.Events) != len(req.GetEvents()) {
		t.Fatalf("got pod %q seq %d with %d events, want %q %d %d", b.Pod, b.Seq, len(b.Events), req.GetPod(), req.GetEventId(), len(req.GetEvents()))
	}
	if b.DPRank < -1 || (req.DpRank == nil) != (b.DPRank == -1) {
		t.Fatalf("got dp rank %d for %v", b.DPRank, req.DpRank)
	}
	for i, e := range b.Events {
		switch e.Kind {
		case events.KindBlockStored:
			if e.BlockSize <= 0 || len(e.BlockHashes) == 0 || len(e.TokenIDs) != len(e.BlockHashes)*e.BlockSize {
				t.Fatalf("event %d: got %d blocks of %d with %d tokens", i, len(e.BlockHashes), e.BlockSize, len(e.TokenIDs))
			}
			if e.HasParent != (e.ParentHash != 0) || e.GroupIdx < 0 || e.SlidingWindow < 0 {
				t.Fatalf("event %d: got parent %d %t group %d window %d", i, e.ParentHash, e.HasParent, e.GroupIdx, e.SlidingWindow)
			}
		case events.KindBlockRemoved:
			if len(e.BlockHashes) == 0 || e.GroupIdx < 0 {
				t.Fatalf("event %d: got %d removed blocks in group %d", i, len(e.BlockHashes), e.GroupIdx)
			}
		case events.KindAllBlocksCleared:
		default:
			t.Fatalf("event %d: got kind %v", i, e.Kind)
		}
	}
}
