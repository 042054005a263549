package vllmwire

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/vmihailenco/msgpack/v5"
)

// Form selects how EncodePayload lays out a batch. It is a bit set: one of
// FormArray and FormMap, optionally with FormOmitRank and FormTrimNils, to
// mimic the engine versions seen in the wild.
type Form uint8

const (
	// FormArray encodes the batch as [ts, events, dp_rank] and each event
	// in the legacy array form ["Tag", field...].
	FormArray Form = 0
	// FormMap encodes the batch as {"ts", "events", "data_parallel_rank"}
	// and each event as a map with "type" first.
	FormMap Form = 1 << 0
	// FormOmitRank leaves out the rank (the third batch element or the
	// map key) when the batch has none (DPRank < 0), like engines older
	// than data-parallel ranks; with a rank it changes nothing.
	FormOmitRank Form = 1 << 1
	// FormTrimNils drops the trailing fields of array-form events that are
	// nil or default, and leaves nil or default fields out of map-form
	// events, like engines older than those fields.
	FormTrimNils Form = 1 << 2
)

// specKindSlidingWindow is the kv_cache_spec_kind the encoder writes for an
// event with a sliding window; decoding reads the window alone.
const specKindSlidingWindow = "sliding_window"

// appendBuf adapts a byte slice to the writer the msgpack Encoder wants.
type appendBuf struct{ b []byte }

// Write appends p.
func (a *appendBuf) Write(p []byte) (int, error) { a.b = append(a.b, p...); return len(p), nil }

// WriteByte appends c.
func (a *appendBuf) WriteByte(c byte) error { a.b = append(a.b, c); return nil }

// EncodePayload appends the msgpack EventBatch for b's TS, DPRank and Events
// to dst and returns the extended slice. Pod, Model and Seq are not part of
// the payload (see Topic and EncodeSeq). Hashes are encoded as unsigned
// integers, ExtraKeys as strings ("" as nil), an empty Medium and LoRAName as
// nil. An event of unknown Kind is an error wrapping ErrUnknownTag; dst is
// returned unchanged then.
//
// Decoding the result with DecodePayload gives back b, except that an event's
// slices may come back nil instead of empty, fields its Kind does not carry
// come back zero, ExtraKeys of BlockRemoved and AllBlocksCleared are
// dropped, and CacheSalt (SGLang's map field) is dropped in the array form.
func EncodePayload(dst []byte, b *events.Batch, form Form) ([]byte, error) {
	w := &appendBuf{b: dst}
	e := msgpack.NewEncoder(w)
	var err error
	if form&FormMap != 0 {
		err = encodeBatchMap(e, b, form)
	} else {
		err = encodeBatchArray(e, b, form)
	}
	if err != nil {
		return dst, err
	}
	return w.b, nil
}

// encodeBatchArray writes [ts, events, dp_rank?].
func encodeBatchArray(e *msgpack.Encoder, b *events.Batch, form Form) error {
	omitRank := form&FormOmitRank != 0 && b.DPRank < 0
	n := 3
	if omitRank {
		n = 2
	}
	_ = e.EncodeArrayLen(n)
	_ = e.EncodeFloat64(b.TS)
	if err := encodeEvents(e, b.Events, form); err != nil {
		return err
	}
	if !omitRank {
		encodeRank(e, b.DPRank)
	}
	return nil
}

// encodeBatchMap writes {"ts":..., "events":[...], "data_parallel_rank":...}.
func encodeBatchMap(e *msgpack.Encoder, b *events.Batch, form Form) error {
	omitRank := form&FormOmitRank != 0 && b.DPRank < 0
	n := 3
	if omitRank {
		n = 2
	}
	_ = e.EncodeMapLen(n)
	_ = e.EncodeString("ts")
	_ = e.EncodeFloat64(b.TS)
	_ = e.EncodeString("events")
	if err := encodeEvents(e, b.Events, form); err != nil {
		return err
	}
	if !omitRank {
		_ = e.EncodeString("data_parallel_rank")
		encodeRank(e, b.DPRank)
	}
	return nil
}

// encodeRank writes a rank, nil for none.
func encodeRank(e *msgpack.Encoder, rank int) {
	if rank < 0 {
		_ = e.EncodeNil()
		return
	}
	_ = e.EncodeInt(int64(rank))
}

// encodeEvents writes the events array.
func encodeEvents(e *msgpack.Encoder, evs []events.Event, form Form) error {
	_ = e.EncodeArrayLen(len(evs))
	for i := range evs {
		if err := encodeEvent(e, &evs[i], form); err != nil {
			return fmt.Errorf("%w (event %d)", err, i)
		}
	}
	return nil
}

// encodeEvent writes one event as a list of (field, value) pairs laid out by
// form: positionally after the tag, or as map entries after "type".
func encodeEvent(e *msgpack.Encoder, ev *events.Event, form Form) error {
	var fields []field
	switch ev.Kind {
	case events.KindBlockStored:
		fields = storedFields[:]
	case events.KindBlockRemoved:
		fields = removedFields[:]
	case events.KindAllBlocksCleared:
	default:
		return fmt.Errorf("%w: cannot encode kind %d", ErrUnknownTag, ev.Kind)
	}
	trim := form&FormTrimNils != 0
	asMap := form&FormMap != 0
	n := len(fields)
	if trim && !asMap {
		for n > 0 && isDefault(ev, fields[n-1]) {
			n--
		}
	}
	if asMap {
		entries := 1
		for _, f := range fields {
			if !trim || !isDefault(ev, f) {
				entries++
			}
		}
		salted := ev.Kind == events.KindBlockStored && ev.CacheSalt != ""
		if salted {
			entries++
		}
		_ = e.EncodeMapLen(entries)
		_ = e.EncodeString("type")
		_ = e.EncodeString(ev.Kind.String())
		for _, f := range fields {
			if !trim || !isDefault(ev, f) {
				_ = e.EncodeString(fieldNames[f])
				encodeField(e, ev, f)
			}
		}
		if salted { // SGLang's field; the array form has no place for it
			_ = e.EncodeString(fieldNames[fCacheSalt])
			_ = e.EncodeString(ev.CacheSalt)
		}
		return nil
	}
	_ = e.EncodeArrayLen(1 + n)
	_ = e.EncodeString(ev.Kind.String())
	for _, f := range fields[:n] {
		encodeField(e, ev, f)
	}
	return nil
}

// isDefault says whether field f of ev encodes as nil (or, for group_idx, as
// a 0 an older engine would not have sent).
func isDefault(ev *events.Event, f field) bool {
	switch f {
	case fParent:
		return !ev.HasParent
	case fLoraID:
		return ev.LoRAID <= 0
	case fMedium:
		return ev.Medium == ""
	case fLoraName:
		return ev.LoRAName == ""
	case fExtraKeys:
		return len(ev.ExtraKeys) == 0
	case fGroupIdx:
		return ev.GroupIdx == 0
	case fSpecKind, fSlidingWindow:
		return ev.SlidingWindow == 0
	}
	return false
}

// encodeField writes the value of field f of ev.
func encodeField(e *msgpack.Encoder, ev *events.Event, f field) {
	switch f {
	case fBlockHashes:
		_ = e.EncodeArrayLen(len(ev.BlockHashes))
		for _, h := range ev.BlockHashes {
			_ = e.EncodeUint(h)
		}
	case fParent:
		if ev.HasParent {
			_ = e.EncodeUint(ev.ParentHash)
		} else {
			_ = e.EncodeNil()
		}
	case fTokenIDs:
		if len(ev.TokenIDs) == 0 && len(ev.BlockHashes) > 0 {
			_ = e.EncodeNil()
			return
		}
		_ = e.EncodeArrayLen(len(ev.TokenIDs))
		for _, t := range ev.TokenIDs {
			_ = e.EncodeUint(uint64(t))
		}
	case fBlockSize:
		_ = e.EncodeInt(int64(ev.BlockSize))
	case fLoraID:
		if ev.LoRAID > 0 {
			_ = e.EncodeInt(ev.LoRAID)
		} else {
			_ = e.EncodeNil()
		}
	case fMedium:
		encodeOptString(e, string(ev.Medium))
	case fLoraName:
		encodeOptString(e, ev.LoRAName)
	case fExtraKeys:
		if len(ev.ExtraKeys) == 0 {
			_ = e.EncodeNil()
			return
		}
		_ = e.EncodeArrayLen(len(ev.ExtraKeys))
		for _, keys := range ev.ExtraKeys {
			encodeBlockKeys(e, keys)
		}
	case fGroupIdx:
		_ = e.EncodeInt(int64(ev.GroupIdx))
	case fSpecKind:
		if ev.SlidingWindow > 0 {
			_ = e.EncodeString(specKindSlidingWindow)
		} else {
			_ = e.EncodeNil()
		}
	case fSlidingWindow:
		if ev.SlidingWindow > 0 {
			_ = e.EncodeInt(int64(ev.SlidingWindow))
		} else {
			_ = e.EncodeNil()
		}
	}
}

// encodeOptString writes s, or nil for "".
func encodeOptString(e *msgpack.Encoder, s string) {
	if s == "" {
		_ = e.EncodeNil()
		return
	}
	_ = e.EncodeString(s)
}

// encodeBlockKeys writes one block's extra keys as vLLM does: nil for none,
// else a tuple (an array) of its elements. A KeyOther element is written as
// the msgpack it was decoded from (its Raw bytes), or as its Text when it
// has none.
func encodeBlockKeys(e *msgpack.Encoder, keys events.BlockKeys) {
	if len(keys) == 0 {
		_ = e.EncodeNil()
		return
	}
	_ = e.EncodeArrayLen(len(keys))
	for _, k := range keys {
		switch {
		case k.Kind == events.KeyInt:
			_ = e.EncodeInt(k.Int)
		case k.Kind == events.KeyOther && len(k.Raw) > 0:
			_ = e.Encode(msgpack.RawMessage(k.Raw))
		default:
			_ = e.EncodeString(k.Text)
		}
	}
}
