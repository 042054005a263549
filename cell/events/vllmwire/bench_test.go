package vllmwire

import (
	"math/rand/v2"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
)

// benchBatch is a realistic busy-engine batch: events BlockStored events of
// blocks blocks of 16 tokens each, with random 64-bit hashes and token ids
// from a 150k vocabulary.
func benchBatch(nEvents, blocks int) *events.Batch {
	rng := rand.New(rand.NewPCG(7, 8))
	b := &events.Batch{TS: 1718000000.5, DPRank: 0}
	for i := 0; i < nEvents; i++ {
		ev := events.Event{Kind: events.KindBlockStored, BlockSize: 16, Medium: "GPU",
			ParentHash: rng.Uint64(), HasParent: true}
		for j := 0; j < blocks; j++ {
			ev.BlockHashes = append(ev.BlockHashes, rng.Uint64())
		}
		for j := 0; j < blocks*16; j++ {
			ev.TokenIDs = append(ev.TokenIDs, uint32(rng.IntN(150000)))
		}
		b.Events = append(b.Events, ev)
	}
	return b
}

func BenchmarkDecodePayload(b *testing.B) {
	const nEvents, blocks = 8, 16
	src := benchBatch(nEvents, blocks)
	for _, f := range []struct {
		name string
		form Form
	}{{"array", FormArray}, {"map", FormMap}} {
		payload, err := EncodePayload(nil, src, f.form)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(f.name, func(b *testing.B) {
			var dst events.Batch
			b.ReportAllocs()
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				if err := DecodePayload(payload, &dst, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N*nEvents)/sec, "events/s")
			b.ReportMetric(float64(b.N*nEvents*blocks)/sec, "blocks/s")
		})
	}
}

func BenchmarkDecodeMessage(b *testing.B) {
	src := benchBatch(8, 16)
	payload, err := EncodePayload(nil, src, FormArray)
	if err != nil {
		b.Fatal(err)
	}
	frames := [][]byte{[]byte(Topic("10.0.0.1:5557", "meta-llama/Llama-3.1-8B")), EncodeSeq(1), payload}
	var dst events.Batch
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		if err := DecodeMessage(frames, &dst, Limits{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodePayload(b *testing.B) {
	src := benchBatch(8, 16)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = EncodePayload(buf[:0], src, FormArray); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}
