package vllmwire

import (
	"encoding/binary"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
)

// fuzzLimits keeps fuzzing fast: small enough to hit every limit, large
// enough for the seeds.
var fuzzLimits = Limits{MaxEvents: 64, MaxBlocksPerEvent: 256, MaxTokensPerEvent: 4096, MaxDepth: 8, MaxStringLen: 256}

// seedPayloads returns valid payloads in every form and the hand-built
// fixtures' shapes.
func seedPayloads(tb testing.TB) [][]byte {
	var out [][]byte
	for _, b := range sampleBatches() {
		for _, f := range allForms {
			p, err := EncodePayload(nil, b, f.form)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, p)
		}
	}
	hash32 := make([]byte, 32)
	hash32[31] = 9
	out = append(out,
		batchOf(1, -1, mp(nil).arr(5).str("BlockStored").arr(2).i64(-1).bin(hash32).i64(-7).tokens(0, 4).uint(2)),
		batchOf(1, 0, mp(nil).arr(9).str("BlockStored").arr(2).uint(1).uint(2).uint(0).null().uint(1).uint(3).null().null().
			arr(2).arr(2).str("mm").uint(0).mapn(1).bin([]byte{1}).raw(0xd4, 1, 2)),
		mp(nil).mapn(3).str("x").arr(1).mapn(0).str("events").arr(1).mapn(2).str("block_hashes").arr(1).uint(5).str("type").str("BlockRemoved").str("ts").uint(2),
		mp(nil).arr(2).uint(3).arr(1).arr(1).str("AllBlocksCleared"),
	)
	return out
}

// checkDecoded asserts the properties every successful decode must have:
// decoding into a used batch gives the same result as into a fresh one, and
// the batch re-encodes, in both forms, to bytes that decode to it again.
func checkDecoded(t *testing.T, payload []byte, got *events.Batch) {
	dirty := sampleBatches()["full"]
	if err := DecodePayload(payload, dirty, fuzzLimits); err != nil {
		t.Fatalf("decode into a used batch failed: %v", err)
	}
	dirty.Pod, dirty.Model, dirty.Seq = got.Pod, got.Model, got.Seq
	if d := diffBatch(dirty, got); d != "" {
		t.Fatalf("decode into a used batch differs: %s", d)
	}
	for _, form := range []Form{FormArray, FormMap | FormTrimNils | FormOmitRank} {
		enc, err := EncodePayload(nil, got, form)
		if err != nil {
			t.Fatalf("re-encode (form %d): %v", form, err)
		}
		again := events.Batch{Pod: got.Pod, Model: got.Model, Seq: got.Seq}
		if err := DecodePayload(enc, &again, fuzzLimits); err != nil {
			t.Fatalf("decode of re-encoded (form %d) %x: %v", form, enc, err)
		}
		if d := diffBatch(&again, got); d != "" {
			t.Fatalf("re-encoded (form %d) batch differs: %s", form, d)
		}
	}
}

func FuzzDecodePayload(f *testing.F) {
	for _, p := range seedPayloads(f) {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		var b events.Batch
		err := DecodePayload(payload, &b, fuzzLimits)
		if err != nil {
			if Reason(err) == "other" {
				t.Fatalf("error without a sentinel: %v", err)
			}
			if len(b.Events) != 0 {
				t.Fatalf("failed decode left %d events", len(b.Events))
			}
			return
		}
		checkDecoded(t, payload, &b)
	})
}

func FuzzDecodeMessage(f *testing.F) {
	for i, p := range seedPayloads(f) {
		f.Add([]byte(Topic("10.0.0.1:5557", "org/model@main")), EncodeSeq(uint64(i)), p, uint8(3))
	}
	f.Add([]byte("kv@pod"), EncodeSeq(1), []byte{0x92, 0, 0x90}, uint8(3))
	f.Add([]byte("kv@p@m"), EncodeSeq(1), []byte{0x92, 0, 0x90}, uint8(2))
	f.Fuzz(func(t *testing.T, topic, seq, payload []byte, nframes uint8) {
		frames := [][]byte{topic, seq, payload, payload}[:nframes%5]
		var b events.Batch
		if err := DecodeMessage(frames, &b, fuzzLimits); err != nil {
			if Reason(err) == "other" {
				t.Fatalf("error without a sentinel: %v", err)
			}
			return
		}
		pod, model, err := ParseTopic(string(topic))
		if err != nil || b.Pod != pod || b.Model != model {
			t.Fatalf("topic %q: got %q %q, ParseTopic gives %q %q %v", topic, b.Pod, b.Model, pod, model, err)
		}
		if len(seq) != 8 || b.Seq != binary.BigEndian.Uint64(seq) {
			t.Fatalf("seq %x: got %d", seq, b.Seq)
		}
		checkDecoded(t, payload, &b)
	})
}
