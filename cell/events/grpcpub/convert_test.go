package grpcpub

import (
	"errors"
	"math"
	"strings"
	"testing"

	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/cell/events"
	"google.golang.org/protobuf/proto"
)

func TestConvertValid(t *testing.T) {
	req := validRequest("pod-a", 7)
	var got events.Batch
	if err := Convert(req, DefaultLimits(), &got); err != nil {
		t.Fatalf("Convert: got %v, want nil", err)
	}
	want := events.Batch{
		Pod: "pod-a", Model: "llama", DPRank: -1, Seq: 7, TS: 1700000000.5,
		Events: []events.Event{
			{
				Kind: events.KindBlockStored, BlockHashes: []uint64{17, 18}, ParentHash: 9, HasParent: true,
				TokenIDs: []uint32{700, 701, 702, 703, 704, 705, 706, 707}, BlockSize: 4, LoRAName: "adapter",
				Medium: "GPU", ExtraKeys: []events.BlockKeys{nil, {{Kind: events.KeyString, Text: "mm:abc"}}}, GroupIdx: 1, SlidingWindow: 128,
			},
			{Kind: events.KindBlockRemoved, BlockHashes: []uint64{3, 4}, Medium: "CPU"},
			{Kind: events.KindAllBlocksCleared},
		},
	}
	if !batchesEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestConvertEdgeFields(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*eventsv1.PublishRequest)
		check func(b *events.Batch) (got, want any)
	}{
		{"parent 0 is no parent", func(r *eventsv1.PublishRequest) { r.Events[0].GetBlockStored().ParentBlockHash = proto.Uint64(0) },
			func(b *events.Batch) (any, any) { return b.Events[0].HasParent, false }},
		{"absent parent is no parent", func(r *eventsv1.PublishRequest) { r.Events[0].GetBlockStored().ParentBlockHash = nil },
			func(b *events.Batch) (any, any) { return b.Events[0].HasParent, false }},
		{"parent above 2^63", func(r *eventsv1.PublishRequest) {
			r.Events[0].GetBlockStored().ParentBlockHash = proto.Uint64(math.MaxUint64)
		}, func(b *events.Batch) (any, any) { return b.Events[0].ParentHash, uint64(math.MaxUint64) }},
		{"dp rank 0", func(r *eventsv1.PublishRequest) { r.DpRank = proto.Int32(0) },
			func(b *events.Batch) (any, any) { return b.Holder(), "pod-a#0" }},
		{"no dp rank", func(r *eventsv1.PublishRequest) {}, func(b *events.Batch) (any, any) { return b.DPRank, -1 }},
		{"no events", func(r *eventsv1.PublishRequest) { r.Events = nil }, func(b *events.Batch) (any, any) { return len(b.Events), 0 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest("pod-a", 1)
			tt.edit(req)
			var b events.Batch
			if err := Convert(req, DefaultLimits(), &b); err != nil {
				t.Fatalf("Convert: got %v, want nil", err)
			}
			if got, want := tt.check(&b); got != want {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestConvertReusesEvents(t *testing.T) {
	var b events.Batch
	if err := Convert(validRequest("pod-a", 1), DefaultLimits(), &b); err != nil {
		t.Fatal(err)
	}
	first := &b.Events[0]
	if err := Convert(validRequest("pod-a", 2), DefaultLimits(), &b); err != nil {
		t.Fatal(err)
	}
	if &b.Events[0] != first {
		t.Error("got a new Events array on the second Convert, want the first one reused")
	}
	if b.Seq != 2 || b.Events[0].BlockHashes[0] != 12 {
		t.Errorf("got seq %d first hash %d, want 2 and 12", b.Seq, b.Events[0].BlockHashes[0])
	}
}

func TestValidateRejects(t *testing.T) {
	lim := DefaultLimits()
	lim.MaxEventsPerRequest = 4
	lim.MaxBlocksPerEvent = 8
	lim.MaxTokensPerRequest = 64
	lim.MaxBlockSize = 16
	lim.MaxExtraKeysPerEvent = 2
	lim.MaxStringLen = 10
	stored := func(r *eventsv1.PublishRequest) *eventsv1.BlockStored { return r.Events[0].GetBlockStored() }
	removed := func(r *eventsv1.PublishRequest) *eventsv1.BlockRemoved { return r.Events[1].GetBlockRemoved() }
	long := strings.Repeat("x", 11)
	tests := []struct {
		name   string
		edit   func(*eventsv1.PublishRequest)
		reason string
		field  string
	}{
		{"empty pod", func(r *eventsv1.PublishRequest) { r.Pod = "" }, ReasonEmptyPod, "pod"},
		{"long pod", func(r *eventsv1.PublishRequest) { r.Pod = long }, ReasonTooLong, "pod"},
		{"long model", func(r *eventsv1.PublishRequest) { r.Model = long }, ReasonTooLong, "model"},
		{"negative rank", func(r *eventsv1.PublishRequest) { r.DpRank = proto.Int32(-1) }, ReasonBadDPRank, "dp_rank"},
		{"NaN ts", func(r *eventsv1.PublishRequest) { r.Ts = math.NaN() }, ReasonBadTS, "ts"},
		{"infinite ts", func(r *eventsv1.PublishRequest) { r.Ts = math.Inf(1) }, ReasonBadTS, "ts"},
		{"negative ts", func(r *eventsv1.PublishRequest) { r.Ts = -1 }, ReasonBadTS, "ts"},
		{"too many events", func(r *eventsv1.PublishRequest) { r.Events = append(r.Events, r.Events...) }, ReasonTooManyEvents, "events"},
		{"nil event", func(r *eventsv1.PublishRequest) { r.Events[2] = nil }, ReasonEmptyEvent, "events[2].event"},
		{"empty event", func(r *eventsv1.PublishRequest) { r.Events[2] = &eventsv1.KVEvent{} }, ReasonEmptyEvent, "events[2].event"},
		{"nil stored body", func(r *eventsv1.PublishRequest) {
			r.Events[0] = &eventsv1.KVEvent{Event: &eventsv1.KVEvent_BlockStored{}}
		}, ReasonNoBlocks, "events[0].block_stored.block_hashes"},
		{"stored without blocks", func(r *eventsv1.PublishRequest) { stored(r).BlockHashes = nil; stored(r).TokenIds = nil },
			ReasonNoBlocks, "events[0].block_stored.block_hashes"},
		{"stored too many blocks", func(r *eventsv1.PublishRequest) { stored(r).BlockHashes = make([]uint64, 9) },
			ReasonTooManyBlocks, "events[0].block_stored.block_hashes"},
		{"block size 0", func(r *eventsv1.PublishRequest) { stored(r).BlockSize = 0 }, ReasonBadBlockSize, "events[0].block_stored.block_size"},
		{"block size over limit", func(r *eventsv1.PublishRequest) { stored(r).BlockSize = 17 }, ReasonBadBlockSize, "events[0].block_stored.block_size"},
		{"huge block size", func(r *eventsv1.PublishRequest) { stored(r).BlockSize = math.MaxUint32 }, ReasonBadBlockSize, "events[0].block_stored.block_size"},
		{"too few tokens", func(r *eventsv1.PublishRequest) { stored(r).TokenIds = stored(r).TokenIds[:7] },
			ReasonTokenCountMismatch, "events[0].block_stored.token_ids"},
		{"too many tokens for blocks", func(r *eventsv1.PublishRequest) { stored(r).TokenIds = append(stored(r).TokenIds, 1) },
			ReasonTokenCountMismatch, "events[0].block_stored.token_ids"},
		{"event over token limit", func(r *eventsv1.PublishRequest) { stored(r).TokenIds = make([]uint32, 65) },
			ReasonTooManyTokens, "events[0].block_stored.token_ids"},
		{"request over token limit", func(r *eventsv1.PublishRequest) {
			s := stored(r)
			s.BlockHashes, s.BlockSize, s.TokenIds, s.ExtraKeys = make([]uint64, 4), 16, make([]uint32, 64), nil
			r.Events[2] = r.Events[0]
		}, ReasonTooManyTokens, "events[2].block_stored.token_ids"},
		{"long lora", func(r *eventsv1.PublishRequest) { stored(r).LoraName = long }, ReasonTooLong, "events[0].block_stored.lora_name"},
		{"long stored medium", func(r *eventsv1.PublishRequest) { stored(r).Medium = long }, ReasonTooLong, "events[0].block_stored.medium"},
		{"too many extra keys", func(r *eventsv1.PublishRequest) { stored(r).ExtraKeys = []string{"a", "b", "c"} },
			ReasonTooManyExtraKeys, "events[0].block_stored.extra_keys"},
		{"extra keys not one per block", func(r *eventsv1.PublishRequest) { stored(r).ExtraKeys = []string{"a"} },
			ReasonExtraKeysCount, "events[0].block_stored.extra_keys"},
		{"long extra key", func(r *eventsv1.PublishRequest) { stored(r).ExtraKeys = []string{"a", long} },
			ReasonTooLong, "events[0].block_stored.extra_keys[1]"},
		{"negative stored group", func(r *eventsv1.PublishRequest) { stored(r).GroupIdx = -1 }, ReasonBadGroupIdx, "events[0].block_stored.group_idx"},
		{"removed without blocks", func(r *eventsv1.PublishRequest) { removed(r).BlockHashes = nil },
			ReasonNoBlocks, "events[1].block_removed.block_hashes"},
		{"removed too many blocks", func(r *eventsv1.PublishRequest) { removed(r).BlockHashes = make([]uint64, 9) },
			ReasonTooManyBlocks, "events[1].block_removed.block_hashes"},
		{"long removed medium", func(r *eventsv1.PublishRequest) { removed(r).Medium = long }, ReasonTooLong, "events[1].block_removed.medium"},
		{"negative removed group", func(r *eventsv1.PublishRequest) { removed(r).GroupIdx = -3 }, ReasonBadGroupIdx, "events[1].block_removed.group_idx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := validRequest("pod-a", 1)
			if err := Validate(req, lim); err != nil {
				t.Fatalf("unedited request: got %v, want valid", err)
			}
			tt.edit(req)
			var b events.Batch
			err := Convert(req, lim, &b)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValidationError", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("got errors.Is(err, ErrInvalid) false, want true")
			}
			if ve.Reason() != tt.reason || ve.Field != tt.field {
				t.Errorf("got reason %q field %q, want %q %q (%v)", ve.Reason(), ve.Field, tt.reason, tt.field, err)
			}
			if ReasonOf(err) != tt.reason {
				t.Errorf("got ReasonOf %q, want %q", ReasonOf(err), tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "grpcpub: ") {
				t.Errorf("got error %q, want the grpcpub: prefix", err)
			}
		})
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: got %v, want valid", err)
	}
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"events", func(c *Config) { c.Limits.MaxEventsPerRequest = 0 }, "Limits.MaxEventsPerRequest = 0"},
		{"blocks", func(c *Config) { c.Limits.MaxBlocksPerEvent = -1 }, "Limits.MaxBlocksPerEvent = -1"},
		{"tokens", func(c *Config) { c.Limits.MaxTokensPerRequest = 0 }, "Limits.MaxTokensPerRequest = 0"},
		{"block size", func(c *Config) { c.Limits.MaxBlockSize = 0 }, "Limits.MaxBlockSize = 0"},
		{"extra keys", func(c *Config) { c.Limits.MaxExtraKeysPerEvent = 0 }, "Limits.MaxExtraKeysPerEvent = 0"},
		{"strings", func(c *Config) { c.Limits.MaxStringLen = 0 }, "Limits.MaxStringLen = 0"},
		{"publishers", func(c *Config) { c.MaxPublishers = 0 }, "Config.MaxPublishers = 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := DefaultConfig()
			tt.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error naming %q", err, tt.want)
			}
			if _, err := NewServer(&recordingSink{}, c); err == nil {
				t.Error("NewServer: got nil error, want the Validate error")
			}
		})
	}
	if _, err := NewServer(nil, DefaultConfig()); err == nil {
		t.Error("NewServer(nil sink): got nil error, want one")
	}
}
