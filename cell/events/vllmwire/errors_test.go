package vllmwire

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
)

func TestReason(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{errors.New("other"), "other"},
		{ErrFrameCount, "frame_count"},
		{ErrBadSeq, "bad_seq"},
		{ErrBadTopic, "topic"},
		{ErrMsgpack, "msgpack"},
		{ErrUnknownTag, "unknown_tag"},
		{ErrBadEvent, "bad_event"},
		{ErrTooLarge, "too_large"},
		{fmt.Errorf("wrapped: %w", ErrTooLarge), "too_large"},
	}
	for _, tt := range tests {
		if got := Reason(tt.err); got != tt.want {
			t.Errorf("Reason(%v): got %q, want %q", tt.err, got, tt.want)
		}
	}
}

// storedEv is a BlockStored array event with one hash, the given tokens
// array (already encoded) and block size.
func storedEv(hash mp, tokens mp, blockSize uint64) mp {
	return mp(nil).arr(5).str("BlockStored").arr(1).raw(hash...).null().raw(tokens...).uint(blockSize)
}

func TestDecodePayloadErrors(t *testing.T) {
	small := Limits{MaxEvents: 2, MaxBlocksPerEvent: 2, MaxTokensPerEvent: 4, MaxDepth: 3, MaxStringLen: 16}
	one := mp(nil).uint(1)
	deep := mp(nil)
	for i := 0; i < 5; i++ {
		deep = deep.arr(1)
	}
	deep = deep.uint(1)
	tests := []struct {
		name    string
		payload mp
		lim     Limits
		want    string
	}{
		{"empty payload", mp{}, Limits{}, "msgpack"},
		{"batch is a string", mp(nil).str("x"), Limits{}, "msgpack"},
		{"batch of one element", mp(nil).arr(1).f64(1), Limits{}, "msgpack"},
		{"batch array truncated", mp(nil).arr(3).f64(1), Limits{}, "msgpack"},
		{"trailing bytes", batchOf(1, 0).uint(1), Limits{}, "msgpack"},
		{"events nil", mp(nil).arr(2).f64(1).null(), Limits{}, "msgpack"},
		{"ts is a string", mp(nil).arr(2).str("now").arr(0), Limits{}, "msgpack"},
		{"event is an int", batchOf(1, 0, one), Limits{}, "msgpack"},
		{"invalid code 0xc1", batchOf(1, 0, mp{0xc1}), Limits{}, "msgpack"},
		{"hash is a bool", batchOf(1, 0, storedEv(mp{0xc3}, mp(nil).tokens(0, 1), 1)), Limits{}, "msgpack"},
		{"token is a float", batchOf(1, 0, storedEv(one, mp(nil).arr(1).f64(1), 1)), Limits{}, "msgpack"},
		{"token array truncated", mp(nil).arr(2).f64(1).arr(1).arr(5).str("BlockStored").arr(1).uint(1).null().arr(3).uint(1), Limits{}, "msgpack"},
		{"medium is an int", batchOf(1, 0, mp(nil).arr(3).str("BlockRemoved").arr(1).uint(1).uint(5)), Limits{}, "msgpack"},
		{"block size is a string", batchOf(1, 0, mp(nil).arr(5).str("BlockStored").arr(1).uint(1).null().null().str("16")), Limits{}, "msgpack"},
		{"array claims more than the payload", mp(nil).arr(2).f64(1).raw(0xdd, 0x7f, 0xff, 0xff, 0xff), Limits{}, "msgpack"},
		{"map key is an int", mp(nil).mapn(1).uint(1).uint(1), Limits{}, "msgpack"},
		{"unknown tag", batchOf(1, 0, mp(nil).arr(1).str("BlockFoo")), Limits{}, "unknown_tag"},
		{"unknown map type", batchOf(1, 0, mp(nil).mapn(1).str("type").str("Nope")), Limits{}, "unknown_tag"},
		{"empty event array", batchOf(1, 0, mp(nil).arr(0)), Limits{}, "bad_event"},
		{"BlockStored without hashes", batchOf(1, 0, mp(nil).arr(1).str("BlockStored")), Limits{}, "bad_event"},
		{"BlockRemoved without hashes", batchOf(1, 0, mp(nil).arr(2).str("BlockRemoved").null()), Limits{}, "bad_event"},
		{"map event without type", batchOf(1, 0, mp(nil).mapn(1).str("block_hashes").arr(0)), Limits{}, "bad_event"},
		{"map batch without events", mp(nil).mapn(1).str("ts").f64(1), Limits{}, "bad_event"},
		{"block size 0", batchOf(1, 0, storedEv(one, mp(nil).null(), 0)), Limits{}, "bad_event"},
		{"token count mismatch", batchOf(1, 0, storedEv(one, mp(nil).tokens(0, 3), 2)), Limits{}, "bad_event"},
		{"token beyond uint32", batchOf(1, 0, storedEv(one, mp(nil).arr(1).uint(1<<32), 1)), Limits{}, "bad_event"},
		{"negative token", batchOf(1, 0, storedEv(one, mp(nil).arr(1).raw(0xff), 1)), Limits{}, "bad_event"},
		{"7-byte hash", batchOf(1, 0, storedEv(mp(nil).bin(make([]byte, 7)), mp(nil).null(), 1)), Limits{}, "bad_event"},
		{"nil hash", batchOf(1, 0, storedEv(mp(nil).null(), mp(nil).null(), 1)), Limits{}, "bad_event"},
		{"negative dp rank", mp(nil).arr(3).f64(1).arr(0).raw(0xff), Limits{}, "bad_event"},
		{"negative group", batchOf(1, 0, mp(nil).arr(4).str("BlockRemoved").arr(1).uint(1).null().raw(0xff)), Limits{}, "bad_event"},
		{"extra keys per block mismatch", batchOf(1, 0, mp(nil).arr(9).str("BlockStored").arr(1).uint(1).null().null().uint(1).null().null().null().arr(2).null().null()), Limits{}, "bad_event"},
		{"too many events", batchOf(1, 0, mp(nil).arr(1).str("AllBlocksCleared"), mp(nil).arr(1).str("AllBlocksCleared"), mp(nil).arr(1).str("AllBlocksCleared")), small, "too_large"},
		{"too many blocks", batchOf(1, 0, mp(nil).arr(2).str("BlockRemoved").arr(3).uint(1).uint(2).uint(3)), small, "too_large"},
		{"too many tokens", batchOf(1, 0, storedEv(one, mp(nil).tokens(0, 5), 5)), small, "too_large"},
		{"block size beyond token limit", batchOf(1, 0, storedEv(one, mp(nil).null(), 5)), small, "bad_event"},
		{"nesting too deep in unknown field", batchOf(1, 0, mp(nil).mapn(3).str("type").str("BlockRemoved").str("block_hashes").arr(0).str("x").raw(deep...)), small, "too_large"},
		{"nesting too deep in extra keys", batchOf(1, 0, mp(nil).arr(9).str("BlockStored").arr(1).uint(1).null().null().uint(1).null().null().null().arr(1).raw(deep...)), small, "too_large"},
		{"string too long", batchOf(1, 0, mp(nil).arr(3).str("BlockRemoved").arr(0).str(strings.Repeat("m", 17))), small, "too_large"},
		{"rendered extra key too long", batchOf(1, 0, mp(nil).arr(9).str("BlockStored").arr(1).uint(1).null().null().uint(1).null().null().null().arr(1).arr(3).str("aaaaaa").str("bbbbbb").str("cccccc")), small, "too_large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sampleBatches()["full"]
			err := DecodePayload(tt.payload, b, tt.lim)
			if got := Reason(err); got != tt.want {
				t.Fatalf("DecodePayload(%x): got %v (reason %q), want reason %q", []byte(tt.payload), err, got, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "vllmwire: ") {
				t.Errorf("error %q: want prefix %q", err, "vllmwire: ")
			}
			if len(b.Events) != 0 {
				t.Errorf("after error: got %d events left in the batch, want 0", len(b.Events))
			}
		})
	}
}

func TestDecodeMessageErrors(t *testing.T) {
	payload := batchOf(1, 0)
	topic := []byte("kv@pod@model")
	tests := []struct {
		name   string
		frames [][]byte
		want   string
	}{
		{"no frames", nil, "frame_count"},
		{"replay frames", [][]byte{EncodeSeq(1), payload}, "frame_count"},
		{"four frames", [][]byte{topic, EncodeSeq(1), payload, payload}, "frame_count"},
		{"short seq", [][]byte{topic, make([]byte, 7), payload}, "bad_seq"},
		{"long seq", [][]byte{topic, make([]byte, 9), payload}, "bad_seq"},
		{"bad topic", [][]byte{[]byte("kv-events"), EncodeSeq(1), payload}, "topic"},
		{"empty topic", [][]byte{nil, EncodeSeq(1), payload}, "topic"},
		{"bad payload", [][]byte{topic, EncodeSeq(1), payload[:3]}, "msgpack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := sampleBatches()["full"]
			err := DecodeMessage(tt.frames, b, Limits{})
			if got := Reason(err); got != tt.want {
				t.Fatalf("DecodeMessage: got %v (reason %q), want reason %q", err, got, tt.want)
			}
			if len(b.Events) != 0 {
				t.Errorf("after error: got %d events left in the batch, want 0", len(b.Events))
			}
		})
	}
	var b events.Batch
	if err := DecodeMessage([][]byte{topic, EncodeSeq(9), payload}, &b, Limits{}); err != nil || b.Pod != "pod" || b.Model != "model" || b.Seq != 9 {
		t.Errorf("DecodeMessage(valid): got %q %q %d %v, want pod model 9 nil", b.Pod, b.Model, b.Seq, err)
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := DefaultLimits().Validate(); err != nil {
		t.Errorf("DefaultLimits().Validate(): got %v, want nil", err)
	}
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("Limits{}.Validate(): got %v, want nil", err)
	}
	err := Limits{MaxDepth: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "MaxDepth") || !strings.HasPrefix(err.Error(), "vllmwire: ") {
		t.Errorf("Validate(MaxDepth -1): got %v, want an error naming MaxDepth", err)
	}
	if got := (Limits{MaxEvents: 3}).withDefaults(); got.MaxEvents != 3 || got.MaxDepth != DefaultLimits().MaxDepth {
		t.Errorf("withDefaults: got %+v, want MaxEvents 3 and default MaxDepth", got)
	}
}
