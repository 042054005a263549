package vllmwire

import (
	"fmt"
	"strconv"

	"github.com/cellrouter/cellrouter/cell/events"
)

// field names one event field, in the positional order of the legacy array
// form of BlockStored.
type field uint8

const (
	fBlockHashes field = iota
	fParent
	fTokenIDs
	fBlockSize
	fLoraID
	fMedium
	fLoraName
	fExtraKeys
	fGroupIdx
	fSpecKind
	fSlidingWindow
	fCacheSalt
	fUnknown
)

// fieldNames are the wire names of the fields, for map keys and errors.
var fieldNames = [...]string{
	fBlockHashes:   "block_hashes",
	fParent:        "parent_block_hash",
	fTokenIDs:      "token_ids",
	fBlockSize:     "block_size",
	fLoraID:        "lora_id",
	fMedium:        "medium",
	fLoraName:      "lora_name",
	fExtraKeys:     "extra_keys",
	fGroupIdx:      "group_idx",
	fSpecKind:      "kv_cache_spec_kind",
	fSlidingWindow: "kv_cache_spec_sliding_window",
	fCacheSalt:     "cache_salt",
	fUnknown:       "unknown field",
}

// The positional fields after the tag in the legacy array forms.
var (
	storedFields  = [...]field{fBlockHashes, fParent, fTokenIDs, fBlockSize, fLoraID, fMedium, fLoraName, fExtraKeys, fGroupIdx, fSpecKind, fSlidingWindow}
	removedFields = [...]field{fBlockHashes, fMedium, fGroupIdx}
)

// fieldOf maps a map-form key to its field; fUnknown for keys to skip.
func fieldOf(key []byte) field {
	switch string(key) {
	case "block_hashes":
		return fBlockHashes
	case "parent_block_hash":
		return fParent
	case "token_ids":
		return fTokenIDs
	case "block_size":
		return fBlockSize
	case "lora_id":
		return fLoraID
	case "medium":
		return fMedium
	case "lora_name":
		return fLoraName
	case "extra_keys":
		return fExtraKeys
	case "group_idx":
		return fGroupIdx
	case "kv_cache_spec_kind":
		return fSpecKind
	case "kv_cache_spec_sliding_window":
		return fSlidingWindow
	case "cache_salt":
		return fCacheSalt
	}
	return fUnknown
}

// kindOf maps a tag or "type" value to its Kind; 0 for unknown tags.
func kindOf(tag []byte) events.Kind {
	switch string(tag) {
	case "BlockStored":
		return events.KindBlockStored
	case "BlockRemoved":
		return events.KindBlockRemoved
	case "AllBlocksCleared":
		return events.KindAllBlocksCleared
	}
	return 0
}

// unknownTag is the error for an unknown tag.
func unknownTag(tag []byte) error {
	return fmt.Errorf("%w: %q", ErrUnknownTag, tag)
}

// eventState is what decoding one event tracks besides the Event itself.
type eventState struct {
	seen         uint32 // bit f set when field f was present and not nil
	loraID       int64
	extraPresent bool
}

// mark records that field f was present.
func (s *eventState) mark(f field) { s.seen |= 1 << f }

// has says whether field f was present.
func (s *eventState) has(f field) bool { return s.seen&(1<<f) != 0 }

// event decodes one event, in array or map form, into ev, reusing its slices.
func (r *reader) event(ev *events.Event) error {
	*ev = events.Event{BlockHashes: ev.BlockHashes[:0], TokenIDs: ev.TokenIDs[:0], ExtraKeys: ev.ExtraKeys[:0]}
	var st eventState
	c, err := r.peek("event")
	if err != nil {
		return err
	}
	switch {
	case isArray(c):
		err = r.eventArray(ev, &st)
	case isMap(c):
		err = r.eventMap(ev, &st)
	default:
		err = fmt.Errorf("%w: event: want array or map, got code %#x", ErrMsgpack, c)
	}
	if err != nil {
		return err
	}
	return finish(ev, &st)
}

// eventArray decodes the legacy form ["Tag", field...]. Missing trailing
// fields take their defaults; elements beyond the known fields are skipped.
func (r *reader) eventArray(ev *events.Event, st *eventState) error {
	n, err := r.arrayLen("event", 1<<20)
	if err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("%w: event array without a tag", ErrBadEvent)
	}
	tag, _, err := r.bytesVal("event tag")
	if err != nil {
		return err
	}
	if ev.Kind = kindOf(tag); ev.Kind == 0 {
		return unknownTag(tag)
	}
	var fields []field
	switch ev.Kind {
	case events.KindBlockStored:
		fields = storedFields[:]
	case events.KindBlockRemoved:
		fields = removedFields[:]
	}
	for k := 1; k < n; k++ {
		f := fUnknown
		if k-1 < len(fields) {
			f = fields[k-1]
		}
		if err := r.field(ev, st, f); err != nil {
			return err
		}
	}
	return nil
}

// eventMap decodes the map form {"type": "Tag", field: value...}, whose keys
// may come in any order. Unknown keys are skipped silently.
func (r *reader) eventMap(ev *events.Event, st *eventState) error {
	n, err := r.mapLen("event", 1<<20)
	if err != nil {
		return err
	}
	for k := 0; k < n; k++ {
		key, _, err := r.bytesVal("event key")
		if err != nil {
			return err
		}
		if string(key) == "type" {
			tag, _, err := r.bytesVal("event type")
			if err != nil {
				return err
			}
			if ev.Kind = kindOf(tag); ev.Kind == 0 {
				return unknownTag(tag)
			}
			continue
		}
		if err := r.field(ev, st, fieldOf(key)); err != nil {
			return err
		}
	}
	if ev.Kind == 0 {
		return fmt.Errorf("%w: event map without \"type\"", ErrBadEvent)
	}
	return nil
}

// field decodes the value of field f into ev and st.
func (r *reader) field(ev *events.Event, st *eventState, f field) error {
	name := fieldNames[f]
	var (
		present bool
		err     error
		v       int64
		s       []byte
		isNil   bool
	)
	switch f {
	case fUnknown:
		return r.skip(name)
	case fBlockHashes:
		ev.BlockHashes, present, err = r.appendHashes(ev.BlockHashes, name)
	case fParent:
		ev.ParentHash, present, err = r.hashVal(name)
		ev.HasParent = present && ev.ParentHash != 0
	case fTokenIDs:
		ev.TokenIDs, present, err = r.appendTokens(ev.TokenIDs, name)
	case fExtraKeys:
		ev.ExtraKeys, present, err = r.readExtraKeys(ev.ExtraKeys)
		st.extraPresent = present
	case fMedium, fLoraName, fSpecKind, fCacheSalt:
		s, isNil, err = r.bytesVal(name)
		present = !isNil
		switch {
		case err != nil:
		case f == fMedium:
			ev.Medium = medium(s)
		case f == fLoraName:
			ev.LoRAName = string(s)
		case f == fCacheSalt:
			ev.CacheSalt = string(s)
		}
	default:
		v, present, err = r.intVal(name)
		if err != nil {
			return err
		}
		max := int64(maxSmallInt)
		if f == fBlockSize {
			max = int64(r.lim.MaxTokensPerEvent)
		}
		if v < 0 || v > max {
			return fmt.Errorf("%w: %s %d out of range", ErrBadEvent, name, v)
		}
		switch f {
		case fBlockSize:
			ev.BlockSize = int(v)
		case fLoraID:
			st.loraID = v
		case fGroupIdx:
			ev.GroupIdx = int(v)
		case fSlidingWindow:
			ev.SlidingWindow = int(v)
		}
	}
	if err != nil {
		return err
	}
	if present {
		st.mark(f)
	}
	return nil
}

// medium returns the Medium named by s, without allocating for the common tiers.
func medium(s []byte) events.Medium {
	switch string(s) {
	case "":
		return ""
	case "GPU":
		return "GPU"
	case "CPU":
		return "CPU"
	case "DISK":
		return "DISK"
	}
	return events.Medium(s)
}

// finish checks the decoded event against the rules of its kind and clears
// the fields the kind does not carry (map form may send them anyway).
func finish(ev *events.Event, st *eventState) error {
	switch ev.Kind {
	case events.KindBlockStored:
		if !st.has(fBlockHashes) {
			return fmt.Errorf("%w: BlockStored without block_hashes", ErrBadEvent)
		}
		if ev.BlockSize <= 0 {
			return fmt.Errorf("%w: BlockStored with block_size %d", ErrBadEvent, ev.BlockSize)
		}
		if len(ev.TokenIDs) != 0 && len(ev.TokenIDs) != len(ev.BlockHashes)*ev.BlockSize {
			return fmt.Errorf("%w: %d token_ids for %d blocks of %d tokens", ErrBadEvent,
				len(ev.TokenIDs), len(ev.BlockHashes), ev.BlockSize)
		}
		if st.extraPresent && len(ev.ExtraKeys) != len(ev.BlockHashes) {
			return fmt.Errorf("%w: %d extra_keys for %d blocks", ErrBadEvent, len(ev.ExtraKeys), len(ev.BlockHashes))
		}
		if st.has(fLoraID) {
			ev.LoRAID = st.loraID
		}
		if ev.LoRAName == "" && st.has(fLoraID) && st.loraID > 0 {
			ev.LoRAName = loraIDPrefix + strconv.FormatInt(st.loraID, 10)
		}
	case events.KindBlockRemoved:
		if !st.has(fBlockHashes) {
			return fmt.Errorf("%w: BlockRemoved without block_hashes", ErrBadEvent)
		}
		*ev = events.Event{Kind: ev.Kind, BlockHashes: ev.BlockHashes, TokenIDs: ev.TokenIDs[:0],
			ExtraKeys: ev.ExtraKeys[:0], Medium: ev.Medium, GroupIdx: ev.GroupIdx}
		st.extraPresent = false
	case events.KindAllBlocksCleared:
		*ev = events.Event{Kind: ev.Kind, BlockHashes: ev.BlockHashes[:0], TokenIDs: ev.TokenIDs[:0], ExtraKeys: ev.ExtraKeys[:0]}
		st.extraPresent = false
	}
	if !st.extraPresent || !anyKeys(ev.ExtraKeys) {
		// Keep the capacity for the next event decoded into ev.
		ev.ExtraKeys = ev.ExtraKeys[:0]
	}
	return nil
}

// maxSmallInt bounds lora_id, group_idx and the sliding window.
const maxSmallInt = 1 << 30

// loraIDPrefix names an adapter that an engine identified only by its
// numeric lora_id (older vLLM sends no lora_name): LoRAName becomes
// "lora_id:<n>", so blocks of different adapters never share a prefix.
const loraIDPrefix = "lora_id:"

// anyKeys reports whether some block of keys has an extra key: vLLM sends
// one nil entry per block when there are none, which is no extra key.
func anyKeys(keys []events.BlockKeys) bool {
	for _, k := range keys {
		if len(k) > 0 {
			return true
		}
	}
	return false
}
