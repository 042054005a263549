package grpcpub

import (
	"context"
	"testing"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/protobuf/proto"
)

// benchRequest is a typical engine batch: one BlockStored of 32 blocks of
// 16 tokens and one BlockRemoved of 8 blocks.
func benchRequest() *eventsv1.PublishRequest {
	hashes := make([]uint64, 32)
	tokens := make([]uint32, 32*16)
	for i := range hashes {
		hashes[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	for i := range tokens {
		tokens[i] = uint32(i * 7)
	}
	return &eventsv1.PublishRequest{
		Pod: "pod-17", Model: "llama", EventId: 1, Ts: 1700000000,
		Events: []*eventsv1.KVEvent{
			{Event: &eventsv1.KVEvent_BlockStored{BlockStored: &eventsv1.BlockStored{
				BlockHashes: hashes, ParentBlockHash: proto.Uint64(5), TokenIds: tokens, BlockSize: 16, Medium: "GPU"}}},
			{Event: &eventsv1.KVEvent_BlockRemoved{BlockRemoved: &eventsv1.BlockRemoved{BlockHashes: hashes[:8], Medium: "GPU"}}},
		},
	}
}

// BenchmarkConvert measures validation and conversion of a decoded request.
func BenchmarkConvert(b *testing.B) {
	req := benchRequest()
	lim := DefaultLimits()
	var batch events.Batch
	b.ReportAllocs()
	for b.Loop() {
		if err := Convert(req, lim, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUnmarshalConvert adds protobuf decoding: the per-request cost
// of the transport before the sink.
func BenchmarkUnmarshalConvert(b *testing.B) {
	data, err := proto.Marshal(benchRequest())
	if err != nil {
		b.Fatal(err)
	}
	lim := DefaultLimits()
	var batch events.Batch
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		req := new(eventsv1.PublishRequest)
		if err := proto.Unmarshal(data, req); err != nil {
			b.Fatal(err)
		}
		if err := Convert(req, lim, &batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandle measures the server's per-request work without the
// network: sequencing, validation, conversion, a discarding sink.
func BenchmarkHandle(b *testing.B) {
	b.Run("open", func(b *testing.B) { benchHandle(b, DefaultConfig()) })
	// With the cell's checks: the caller's pods and the known pods.
	cfg := DefaultConfig()
	cfg.Authorize = func(context.Context, string) error { return nil }
	cfg.Admits = func(string) bool { return true }
	b.Run("authorized", func(b *testing.B) { benchHandle(b, cfg) })
}

func benchHandle(b *testing.B, cfg Config) {
	srv, err := NewServer(sinkDiscard, cfg)
	if err != nil {
		b.Fatal(err)
	}
	req := benchRequest()
	var batch events.Batch
	ctx := context.Background()
	b.ReportAllocs()
	id := uint64(0)
	for b.Loop() {
		req.EventId = id
		id++
		resp, err := srv.Handle(ctx, req, &batch)
		if err != nil || resp.GetStatus() != eventsv1.PublishStatus_PUBLISH_STATUS_APPLIED {
			b.Fatalf("got %v %v, want applied", resp, err)
		}
	}
}
