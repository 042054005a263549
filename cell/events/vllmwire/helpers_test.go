package vllmwire

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/cellrouter/cellrouter/cell/events"
)

// mp builds msgpack bytes by hand, independently of the msgpack library, for
// fixtures that pin exact encodings.
type mp []byte

func (m mp) arr(n int) mp {
	switch {
	case n < 16:
		return append(m, 0x90|byte(n))
	case n < 1<<16:
		return append(append(m, 0xdc), byte(n>>8), byte(n))
	}
	return binary.BigEndian.AppendUint32(append(m, 0xdd), uint32(n))
}

func (m mp) mapn(n int) mp {
	if n < 16 {
		return append(m, 0x80|byte(n))
	}
	return append(append(m, 0xde), byte(n>>8), byte(n))
}

func (m mp) str(s string) mp {
	switch {
	case len(s) < 32:
		m = append(m, 0xa0|byte(len(s)))
	case len(s) < 256:
		m = append(m, 0xd9, byte(len(s)))
	default:
		m = append(m, 0xda, byte(len(s)>>8), byte(len(s)))
	}
	return append(m, s...)
}

func (m mp) bin(b []byte) mp {
	return append(append(m, 0xc4, byte(len(b))), b...)
}

// uint encodes v in its smallest unsigned form.
func (m mp) uint(v uint64) mp {
	switch {
	case v < 128:
		return append(m, byte(v))
	case v <= math.MaxUint8:
		return append(m, 0xcc, byte(v))
	case v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(m, 0xcd), uint16(v))
	case v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(m, 0xce), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(m, 0xcf), v)
}

// i64 encodes v always as int64 (0xd3), as SGLang does.
func (m mp) i64(v int64) mp {
	return binary.BigEndian.AppendUint64(append(m, 0xd3), uint64(v))
}

func (m mp) null() mp { return append(m, 0xc0) }

func (m mp) f64(v float64) mp {
	return binary.BigEndian.AppendUint64(append(m, 0xcb), math.Float64bits(v))
}

func (m mp) raw(b ...byte) mp { return append(m, b...) }

// tokens appends n consecutive token ids starting at first.
func (m mp) tokens(first, n int) mp {
	m = m.arr(n)
	for i := 0; i < n; i++ {
		m = m.uint(uint64(first + i))
	}
	return m
}

// seqTokens returns n consecutive token ids starting at first.
func seqTokens(first, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(first + i)
	}
	return out
}

// diffBatch returns "" when got and want are equal, else a description of
// the first difference. Empty and nil slices are equal; floats compare by bits.
func diffBatch(got, want *events.Batch) string {
	switch {
	case got.Pod != want.Pod || got.Model != want.Model || got.Seq != want.Seq:
		return fmt.Sprintf("header: got %q %q %d, want %q %q %d", got.Pod, got.Model, got.Seq, want.Pod, want.Model, want.Seq)
	case math.Float64bits(got.TS) != math.Float64bits(want.TS):
		return fmt.Sprintf("TS: got %v, want %v", got.TS, want.TS)
	case got.DPRank != want.DPRank:
		return fmt.Sprintf("DPRank: got %d, want %d", got.DPRank, want.DPRank)
	case len(got.Events) != len(want.Events):
		return fmt.Sprintf("len(Events): got %d, want %d", len(got.Events), len(want.Events))
	}
	for i := range got.Events {
		if d := diffEvent(&got.Events[i], &want.Events[i]); d != "" {
			return fmt.Sprintf("event %d: %s", i, d)
		}
	}
	return ""
}

func diffEvent(g, w *events.Event) string {
	switch {
	case g.Kind != w.Kind:
		return fmt.Sprintf("Kind: got %v, want %v", g.Kind, w.Kind)
	case !slices.Equal(g.BlockHashes, w.BlockHashes):
		return fmt.Sprintf("BlockHashes: got %x, want %x", g.BlockHashes, w.BlockHashes)
	case g.ParentHash != w.ParentHash || g.HasParent != w.HasParent:
		return fmt.Sprintf("parent: got %x/%v, want %x/%v", g.ParentHash, g.HasParent, w.ParentHash, w.HasParent)
	case !slices.Equal(g.TokenIDs, w.TokenIDs):
		return fmt.Sprintf("TokenIDs: got %v, want %v", g.TokenIDs, w.TokenIDs)
	case g.BlockSize != w.BlockSize:
		return fmt.Sprintf("BlockSize: got %d, want %d", g.BlockSize, w.BlockSize)
	case g.LoRAName != w.LoRAName:
		return fmt.Sprintf("LoRAName: got %q, want %q", g.LoRAName, w.LoRAName)
	case g.Medium != w.Medium:
		return fmt.Sprintf("Medium: got %q, want %q", g.Medium, w.Medium)
	case g.CacheSalt != w.CacheSalt:
		return fmt.Sprintf("CacheSalt: got %q, want %q", g.CacheSalt, w.CacheSalt)
	case g.LoRAID != w.LoRAID:
		return fmt.Sprintf("LoRAID: got %d, want %d", g.LoRAID, w.LoRAID)
	case !keysEqual(g.ExtraKeys, w.ExtraKeys):
		return fmt.Sprintf("ExtraKeys: got %v, want %v", g.ExtraKeys, w.ExtraKeys)
	case g.GroupIdx != w.GroupIdx:
		return fmt.Sprintf("GroupIdx: got %d, want %d", g.GroupIdx, w.GroupIdx)
	case g.SlidingWindow != w.SlidingWindow:
		return fmt.Sprintf("SlidingWindow: got %d, want %d", g.SlidingWindow, w.SlidingWindow)
	}
	return ""
}

// sampleBatches returns batches that exercise every field, for round trips
// and fuzz seeds.
func sampleBatches() map[string]*events.Batch {
	return map[string]*events.Batch{
		"full": {
			TS: 1718000000.25, DPRank: 3,
			Events: []events.Event{
				{Kind: events.KindBlockStored, BlockHashes: []uint64{1<<63 + 5, 42, 7},
					ParentHash: 99, HasParent: true, TokenIDs: seqTokens(100000, 12), BlockSize: 4,
					LoRAName: "adapter-a", Medium: "GPU", ExtraKeys: []events.BlockKeys{nil, {strKey("adapter-a"), strKey("salt")}, {mmPair}},
					GroupIdx: 1, SlidingWindow: 4096},
				{Kind: events.KindBlockRemoved, BlockHashes: []uint64{42}, Medium: "CPU", GroupIdx: 2},
				{Kind: events.KindAllBlocksCleared},
				{Kind: events.KindBlockStored, BlockHashes: []uint64{math.MaxUint64}, BlockSize: 16, Medium: "DISK_NVME"},
			},
		},
		"minimal": {
			TS: 1, DPRank: -1,
			Events: []events.Event{
				{Kind: events.KindBlockStored, BlockHashes: []uint64{10}, TokenIDs: seqTokens(0, 16), BlockSize: 16},
				{Kind: events.KindBlockRemoved, BlockHashes: []uint64{10, 11}},
			},
		},
		"empty": {TS: 0, DPRank: 0},
	}
}

// allForms lists the encoder layouts round trips are checked in.
var allForms = []struct {
	name string
	form Form
}{
	{"array", FormArray},
	{"map", FormMap},
	{"array-omit-rank", FormArray | FormOmitRank},
	{"map-omit-rank", FormMap | FormOmitRank},
	{"array-trim", FormArray | FormTrimNils},
	{"map-trim", FormMap | FormTrimNils},
	{"array-old", FormArray | FormTrimNils | FormOmitRank},
}

// keysEqual compares extra keys by kind, text and value (not Raw), an empty
// list and nil alike.
func keysEqual(g, w []events.BlockKeys) bool {
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if len(g[i]) != len(w[i]) {
			return false
		}
		for j := range g[i] {
			a, b := g[i][j], w[i][j]
			if a.Kind != b.Kind || a.Text != b.Text || a.Int != b.Int {
				return false
			}
		}
	}
	return true
}

func strKey(s string) events.ExtraKey { return events.ExtraKey{Kind: events.KeyString, Text: s} }
func intKey(n int64) events.ExtraKey  { return events.ExtraKey{Kind: events.KeyInt, Int: n} }
func otherKey(text string, raw ...byte) events.ExtraKey {
	return events.ExtraKey{Kind: events.KeyOther, Text: text, Raw: raw}
}

// mmPair is vLLM's multimodal extra key ("mm", 0) as it arrives: a
// two-element array.
var mmPair = otherKey(`["mm",0]`, 0x92, 0xa2, 'm', 'm', 0x00)
