package vllmwire

import (
	"errors"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
)

func TestRoundTrip(t *testing.T) {
	for name, want := range sampleBatches() {
		for _, f := range allForms {
			t.Run(name+"/"+f.name, func(t *testing.T) {
				payload, err := EncodePayload(nil, want, f.form)
				if err != nil {
					t.Fatalf("EncodePayload: %v", err)
				}
				var got events.Batch
				if err := DecodePayload(payload, &got, Limits{}); err != nil {
					t.Fatalf("DecodePayload: %v", err)
				}
				if d := diffBatch(&got, want); d != "" {
					t.Errorf("round trip: %s", d)
				}
			})
		}
	}
}

func TestRoundTripMessage(t *testing.T) {
	want := sampleBatches()["full"]
	want.Pod, want.Model, want.Seq = "10.1.2.3:5557", "org/model", 77
	payload, err := EncodePayload(nil, want, FormMap)
	if err != nil {
		t.Fatalf("EncodePayload: %v", err)
	}
	frames := [][]byte{[]byte(Topic(want.Pod, want.Model)), EncodeSeq(want.Seq), payload}
	var got events.Batch
	if err := DecodeMessage(frames, &got, DefaultLimits()); err != nil {
		t.Fatalf("DecodeMessage: %v", err)
	}
	if d := diffBatch(&got, want); d != "" {
		t.Errorf("DecodeMessage: %s", d)
	}
	if got.Holder() != "10.1.2.3:5557#3" {
		t.Errorf("Holder: got %q, want %q", got.Holder(), "10.1.2.3:5557#3")
	}
}

func TestEncodeAppends(t *testing.T) {
	prefix := []byte("keep")
	out, err := EncodePayload(prefix, sampleBatches()["minimal"], FormArray)
	if err != nil {
		t.Fatalf("EncodePayload: %v", err)
	}
	if string(out[:4]) != "keep" {
		t.Errorf("EncodePayload: got prefix %q, want %q", out[:4], "keep")
	}
	var got events.Batch
	if err := DecodePayload(out[4:], &got, Limits{}); err != nil {
		t.Fatalf("DecodePayload: %v", err)
	}
	bad := &events.Batch{Events: []events.Event{{Kind: 0}}}
	if out, err := EncodePayload(prefix, bad, FormMap); !errors.Is(err, ErrUnknownTag) || string(out) != "keep" {
		t.Errorf("EncodePayload(kind 0): got %q, %v, want dst unchanged and ErrUnknownTag", out, err)
	}
}

func TestEncodeTrimDropsTrailingNils(t *testing.T) {
	b := &events.Batch{DPRank: -1, Events: []events.Event{
		{Kind: events.KindBlockStored, BlockHashes: []uint64{1}, TokenIDs: seqTokens(0, 2), BlockSize: 2},
		{Kind: events.KindBlockRemoved, BlockHashes: []uint64{1}},
	}}
	got, err := EncodePayload(nil, b, FormArray|FormTrimNils|FormOmitRank)
	if err != nil {
		t.Fatalf("EncodePayload: %v", err)
	}
	want := mp(nil).arr(2).f64(0).arr(2).
		arr(5).str("BlockStored").arr(1).uint(1).null().tokens(0, 2).uint(2).
		arr(2).str("BlockRemoved").arr(1).uint(1)
	if string(got) != string(want) {
		t.Errorf("EncodePayload trimmed: got %x, want %x", got, []byte(want))
	}
}

// TestReuseDoesNotLeak decodes a large batch and then a small one into the
// same Batch, and checks the result equals a fresh decode of the small one.
func TestReuseDoesNotLeak(t *testing.T) {
	big, err := EncodePayload(nil, sampleBatches()["full"], FormMap)
	if err != nil {
		t.Fatal(err)
	}
	for _, small := range []*events.Batch{
		sampleBatches()["minimal"],
		sampleBatches()["empty"],
		{DPRank: -1, Events: []events.Event{
			{Kind: events.KindAllBlocksCleared},
			{Kind: events.KindBlockStored, BlockHashes: []uint64{5}, BlockSize: 1},
			{Kind: events.KindBlockRemoved, BlockHashes: []uint64{5}},
			{Kind: events.KindBlockStored, BlockHashes: []uint64{6}, BlockSize: 1, TokenIDs: []uint32{9}},
		}},
	} {
		payload, err := EncodePayload(nil, small, FormArray|FormTrimNils|FormOmitRank)
		if err != nil {
			t.Fatal(err)
		}
		var fresh, reused events.Batch
		if err := DecodePayload(payload, &fresh, Limits{}); err != nil {
			t.Fatalf("fresh decode: %v", err)
		}
		if err := DecodePayload(big, &reused, Limits{}); err != nil {
			t.Fatalf("big decode: %v", err)
		}
		if err := DecodePayload(payload, &reused, Limits{}); err != nil {
			t.Fatalf("reused decode: %v", err)
		}
		if d := diffBatch(&reused, &fresh); d != "" {
			t.Errorf("reused batch differs from fresh: %s", d)
		}
		for i, ev := range reused.Events {
			if len(ev.ExtraKeys) != 0 {
				t.Errorf("event %d: got ExtraKeys %v from the previous batch, want none", i, ev.ExtraKeys)
			}
		}
		// A failed decode into a used batch leaves no events behind.
		if err := DecodePayload(big[:len(big)-1], &reused, Limits{}); err == nil || len(reused.Events) != 0 {
			t.Errorf("truncated decode: got err %v and %d events, want an error and 0 events", err, len(reused.Events))
		}
	}
}

func TestDecodeReplay(t *testing.T) {
	want := sampleBatches()["minimal"]
	want.Seq = 41
	payload, err := EncodePayload(nil, want, FormArray)
	if err != nil {
		t.Fatal(err)
	}
	got := events.Batch{}
	done, err := DecodeReplay([][]byte{EncodeSeq(41), payload}, &got, Limits{})
	if err != nil || done {
		t.Fatalf("DecodeReplay: got done %v, err %v, want false, nil", done, err)
	}
	if d := diffBatch(&got, want); d != "" {
		t.Errorf("DecodeReplay: %s", d)
	}
	done, err = DecodeReplay([][]byte{EncodeSeq(ReplayEndSeq), nil}, &got, Limits{})
	if err != nil || !done || len(got.Events) != 0 {
		t.Errorf("DecodeReplay(end): got done %v, err %v, %d events, want true, nil, 0", done, err, len(got.Events))
	}
	tests := []struct {
		name   string
		frames [][]byte
		want   string
	}{
		{"three frames", [][]byte{[]byte("kv@p@m"), EncodeSeq(1), payload}, "frame_count"},
		{"short seq", [][]byte{{1}, payload}, "bad_seq"},
		{"end with payload", [][]byte{EncodeSeq(ReplayEndSeq), payload}, "msgpack"},
		{"bad payload", [][]byte{EncodeSeq(2), payload[:2]}, "msgpack"},
	}
	for _, tt := range tests {
		if _, err := DecodeReplay(tt.frames, &got, Limits{}); Reason(err) != tt.want {
			t.Errorf("DecodeReplay(%s): got %v, want reason %q", tt.name, err, tt.want)
		}
	}
}

// TestConcurrentDecode decodes different payloads from several goroutines at
// once (the pooled readers must not be shared); run it with -race.
func TestConcurrentDecode(t *testing.T) {
	var payloads [][]byte
	var wants []*events.Batch
	for _, b := range sampleBatches() {
		for _, f := range allForms {
			p, err := EncodePayload(nil, b, f.form)
			if err != nil {
				t.Fatal(err)
			}
			payloads, wants = append(payloads, p), append(wants, b)
		}
	}
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		go func() {
			var got events.Batch
			for i := 0; i < 50; i++ {
				k := (i*7 + g) % len(payloads)
				if err := DecodePayload(payloads[k], &got, Limits{}); err != nil {
					errs <- err.Error()
					return
				}
				if d := diffBatch(&got, wants[k]); d != "" {
					errs <- d
					return
				}
			}
			errs <- ""
		}()
	}
	for g := 0; g < 4; g++ {
		if msg := <-errs; msg != "" {
			t.Errorf("concurrent decode: %s", msg)
		}
	}
}
