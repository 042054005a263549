package vllmwire

import (
	"bytes"
	"math"
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
)

// stored is a BlockStored event literal helper for fixture expectations.
func stored(hashes []uint64, tokens []uint32, blockSize int) events.Event {
	return events.Event{Kind: events.KindBlockStored, BlockHashes: hashes, TokenIDs: tokens, BlockSize: blockSize}
}

// batchOf wraps events in an array-form batch [ts, events, rank].
func batchOf(ts float64, rank int, evs ...mp) mp {
	m := mp(nil).arr(3).f64(ts).arr(len(evs))
	for _, e := range evs {
		m = append(m, e...)
	}
	if rank < 0 {
		return m.null()
	}
	return m.uint(uint64(rank))
}

// TestFixtures decodes hand-built payloads that pin the edge cases seen in
// real captures.
func TestFixtures(t *testing.T) {
	hash32 := bytes.Repeat([]byte{0xee}, 24)
	hash32 = append(hash32, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08)
	minimalStored := mp(nil).arr(5).str("BlockStored").arr(1).uint(7).null().tokens(1, 2).uint(2)

	withParent := stored([]uint64{1}, []uint32{1, 2}, 2)
	withParent.ParentHash, withParent.HasParent = 5, true
	full := stored([]uint64{1}, []uint32{1, 2}, 2)
	full.Medium, full.LoRAName, full.GroupIdx, full.SlidingWindow = "CPU", "ad", 3, 128
	full.ExtraKeys, full.LoRAID = []events.BlockKeys{{strKey("salt")}}, 9
	loraByID := stored([]uint64{1}, []uint32{1, 2}, 2)
	loraByID.LoRAName, loraByID.LoRAID = "lora_id:5", 5
	extra := stored([]uint64{1, 2, 3, 4}, nil, 1)
	extra.ExtraKeys = []events.BlockKeys{nil, {strKey("salt")}, {strKey("mm"), intKey(0)},
		{otherKey("0xabcd"), intKey(-3), otherKey("1.5"), otherKey("true"), otherKey(`{"k":nil,"q\"":"\n"}`)}}
	// vLLM 0.26 map form: one nil extra_keys entry per block, group and
	// spec fields, lora_name nil, and a key this package does not know.
	v026 := stored([]uint64{7, 8}, []uint32{1, 2, 3, 4}, 2)
	v026.Medium = "GPU"
	nested := stored([]uint64{7}, []uint32{1, 2}, 2)
	nested.ExtraKeys = []events.BlockKeys{{strKey("ad"), otherKey(`[["img",0],"x"]`), otherKey("0x0102"), intKey(1 << 40)}}
	removed := events.Event{Kind: events.KindBlockRemoved, BlockHashes: []uint64{1, 2}, Medium: "GPU", GroupIdx: 1}

	tests := []struct {
		name    string
		payload mp
		want    events.Batch
	}{
		{
			name:    "negative int64 hashes (SGLang)",
			payload: batchOf(1, -1, mp(nil).arr(5).str("BlockStored").arr(2).i64(-1).i64(-2).i64(math.MinInt64).tokens(0, 2).uint(1)),
			want: events.Batch{TS: 1, DPRank: -1, Events: []events.Event{{Kind: events.KindBlockStored,
				BlockHashes: []uint64{math.MaxUint64, math.MaxUint64 - 1}, ParentHash: 1 << 63, HasParent: true,
				TokenIDs: []uint32{0, 1}, BlockSize: 1}}},
		},
		{
			name:    "uint64 hash above 2^63 and small ints",
			payload: batchOf(1, 0, mp(nil).arr(5).str("BlockStored").arr(3).uint(1<<63+1).uint(3).uint(300).null().null().uint(4)),
			want:    events.Batch{TS: 1, DPRank: 0, Events: []events.Event{stored([]uint64{1<<63 + 1, 3, 300}, nil, 4)}},
		},
		{
			name:    "32-byte hashes as bin and str, 8-byte hash",
			payload: batchOf(1, 0, mp(nil).arr(5).str("BlockStored").arr(2).bin(hash32).str(string(hash32)).bin([]byte{0, 0, 0, 0, 0, 0, 1, 0}).tokens(0, 2).uint(1)),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{{Kind: events.KindBlockStored,
				BlockHashes: []uint64{0x0102030405060708, 0x0102030405060708}, ParentHash: 256, HasParent: true,
				TokenIDs: []uint32{0, 1}, BlockSize: 1}}},
		},
		{
			name:    "trailing fields missing",
			payload: batchOf(1, 0, minimalStored),
			want:    events.Batch{TS: 1, DPRank: 0, Events: []events.Event{stored([]uint64{7}, []uint32{1, 2}, 2)}},
		},
		{
			name: "trailing nils present, parent 0, extra element skipped",
			payload: batchOf(1, 0, mp(nil).arr(13).str("BlockStored").arr(1).uint(7).uint(0).tokens(1, 2).uint(2).
				null().null().null().null().null().null().null().mapn(1).str("future").arr(2).uint(1).uint(2)),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{stored([]uint64{7}, []uint32{1, 2}, 2)}},
		},
		{
			name:    "parent present",
			payload: batchOf(1, 0, mp(nil).arr(5).str("BlockStored").arr(1).uint(1).uint(5).tokens(1, 2).uint(2)),
			want:    events.Batch{TS: 1, DPRank: 0, Events: []events.Event{withParent}},
		},
		{
			name: "every field",
			payload: batchOf(1, 0, mp(nil).arr(12).str("BlockStored").arr(1).uint(1).null().tokens(1, 2).uint(2).
				uint(9).str("CPU").str("ad").arr(1).str("salt").uint(3).str("sliding_window").uint(128)),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{full}},
		},
		{
			name:    "lora_id without lora_name",
			payload: batchOf(1, 0, mp(nil).arr(8).str("BlockStored").arr(1).uint(1).null().tokens(1, 2).uint(2).uint(5).null().null()),
			want:    events.Batch{TS: 1, DPRank: 0, Events: []events.Event{loraByID}},
		},
		{
			name: "extra keys of every shape",
			payload: batchOf(1, 0, mp(nil).arr(9).str("BlockStored").arr(4).uint(1).uint(2).uint(3).uint(4).null().null().uint(1).
				null().null().null().
				arr(4).null().str("salt").arr(2).str("mm").uint(0).
				arr(5).bin([]byte{0xab, 0xcd}).raw(0xfd).raw(0xcb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0).raw(0xc3).
				mapn(2).str("k").null().str("q\"").str("\n")),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{extra}},
		},
		{
			name: "vLLM 0.26 map form, extra_keys [nil, nil]",
			payload: batchOf(1, 0, mp(nil).mapn(11).str("type").str("BlockStored").str("block_hashes").arr(2).uint(7).uint(8).
				str("parent_block_hash").null().str("token_ids").tokens(1, 4).str("block_size").uint(2).str("lora_id").null().
				str("medium").str("GPU").str("lora_name").null().str("extra_keys").arr(2).null().null().
				str("group_idx").uint(0).str("kv_cache_spec_kind").str("full_attention")),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{v026}},
		},
		{
			name: "extra keys tuple with nested pair, bytes and a large int",
			payload: batchOf(1, 0, mp(nil).arr(9).str("BlockStored").arr(1).uint(7).null().tokens(1, 2).uint(2).null().null().null().
				arr(1).arr(4).str("ad").arr(2).arr(2).str("img").uint(0).str("x").bin([]byte{1, 2}).uint(1<<40)),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{nested}},
		},
		{
			name:    "BlockRemoved short, full, and AllBlocksCleared with extra element",
			payload: batchOf(1, 0, mp(nil).arr(2).str("BlockRemoved").arr(1).uint(1), mp(nil).arr(4).str("BlockRemoved").arr(2).uint(1).uint(2).str("GPU").uint(1), mp(nil).arr(2).str("AllBlocksCleared").null()),
			want: events.Batch{TS: 1, DPRank: 0, Events: []events.Event{
				{Kind: events.KindBlockRemoved, BlockHashes: []uint64{1}}, removed, {Kind: events.KindAllBlocksCleared}}},
		},
		{
			name:    "two-element batch, int ts",
			payload: mp(nil).arr(2).uint(1718000000).arr(1).raw(minimalStored...),
			want:    events.Batch{TS: 1718000000, DPRank: -1, Events: []events.Event{stored([]uint64{7}, []uint32{1, 2}, 2)}},
		},
		{
			name:    "four-element batch, float32 ts",
			payload: mp(nil).arr(4).raw(0xca, 0x3f, 0xc0, 0, 0).arr(0).uint(2).str("future"),
			want:    events.Batch{TS: 1.5, DPRank: 2, Events: []events.Event{}},
		},
		{
			name: "map batch, keys reordered, unknown keys, map events with type last",
			payload: mp(nil).mapn(4).str("events").arr(2).
				mapn(6).str("block_hashes").arr(1).uint(7).str("token_ids").tokens(1, 2).str("new_field").arr(2).mapn(0).null().
				str("block_size").uint(2).str("parent_block_hash").null().str("type").str("BlockStored").
				mapn(4).str("type").str("BlockRemoved").str("block_hashes").arr(2).uint(1).uint(2).str("medium").str("GPU").str("group_idx").uint(1).
				str("unknown").mapn(1).str("x").arr(1).uint(1).
				str("data_parallel_rank").uint(4).str("ts").uint(3),
			want: events.Batch{TS: 3, DPRank: 4, Events: []events.Event{stored([]uint64{7}, []uint32{1, 2}, 2), removed}},
		},
		{
			name: "map BlockRemoved carrying BlockStored fields drops them",
			payload: batchOf(1, -1, mp(nil).mapn(5).str("type").str("BlockRemoved").str("block_hashes").arr(1).uint(3).
				str("token_ids").tokens(0, 3).str("block_size").uint(3).str("lora_name").str("x")),
			want: events.Batch{TS: 1, DPRank: -1, Events: []events.Event{{Kind: events.KindBlockRemoved, BlockHashes: []uint64{3}}}},
		},
		{
			name:    "wide token encodings",
			payload: batchOf(1, 0, mp(nil).arr(5).str("BlockStored").arr(1).uint(1).null().arr(4).uint(200).uint(60000).uint(150000).raw(0xcf, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff).uint(4)),
			want:    events.Batch{TS: 1, DPRank: 0, Events: []events.Event{stored([]uint64{1}, []uint32{200, 60000, 150000, math.MaxUint32}, 4)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got events.Batch
			if err := DecodePayload(tt.payload, &got, Limits{}); err != nil {
				t.Fatalf("DecodePayload(%x): %v", []byte(tt.payload), err)
			}
			if d := diffBatch(&got, &tt.want); d != "" {
				t.Errorf("got %s", d)
			}
			for i := range got.Events {
				// Raw keeps the bytes of what Text renders.
				for _, keys := range got.Events[i].ExtraKeys {
					for _, k := range keys {
						if (k.Kind == events.KeyOther) != (len(k.Raw) > 0) {
							t.Errorf("event %d: key %+v: Raw set %v for kind %d", i, k, len(k.Raw) > 0, k.Kind)
						}
					}
				}
			}
		})
	}
}
