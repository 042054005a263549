package events

import (
	"strconv"
	"strings"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
)

// KeyKind says what one element of a block's extra keys is.
type KeyKind uint8

// The kinds of extra-key elements.
const (
	// KeyString is a string: a LoRA adapter's name, a cache salt, or (vLLM
	// before multimodal identifiers became pairs) a multimodal hash.
	KeyString KeyKind = iota + 1
	// KeyInt is an integer: older vLLM's numeric LoRA id.
	KeyInt
	// KeyOther is anything else: a multimodal (identifier, offset) pair, a
	// prompt-embeddings digest (bytes), a float. Text holds a canonical
	// rendering of it, so two equal elements have equal Text.
	KeyOther
)

// ExtraKey is one element of a block's extra keys.
type ExtraKey struct {
	// Kind says what the element is.
	Kind KeyKind
	// Text is a KeyString's value, or a KeyOther's canonical rendering.
	Text string
	// Int is a KeyInt's value.
	Int int64
	// Raw is a KeyOther's msgpack encoding as the engine sent it, when it
	// came over a msgpack transport (so that it can be sent on unchanged);
	// nil otherwise.
	Raw []byte
}

// BlockKeys are one block's extra keys: the elements of the tuple the engine
// mixed into the block's hash besides its parent and its tokens, in engine
// order (vLLM: LoRA adapter, multimodal identifiers, cache salt on a
// prompt's first block, prompt-embeddings digests). nil or empty means the
// block has none.
type BlockKeys []ExtraKey

// blockIdentity maps one block's extra keys onto the cache identity the
// request side hashes with (blockhash.Identity: model, LoRA adapter, cache
// salt), and reports whether every key mapped. lora and loraID are the
// event's adapter (name, and older vLLM's numeric id; "" and 0 for none);
// first says whether the block starts its chain.
//
// The rules follow the order vLLM builds the tuple in:
//
//   - a leading element naming the event's adapter (its name, or its
//     numeric id) is the LoRA key, already part of the identity through the
//     event's lora_name;
//   - on a chain's first block, a remaining single string is the cache salt
//     (vLLM salts only a prompt's first block; the chained hashes carry it
//     to the rest), returned as salt;
//   - anything else (multimodal identifiers, prompt-embeddings digests, a
//     string on a later block) has no request-side counterpart: ok is false,
//     and the block and its descendants are not indexed, since no request
//     the router hashes could match them.
//
// A string misread as a salt (an old-style multimodal hash alone on a first
// block) only indexes the block under an identity no request has, which
// costs index room, never a false match.
func blockIdentity(keys BlockKeys, first bool, lora string, loraID int64) (salt string, ok bool) {
	i := 0
	if i < len(keys) && isLoRAKey(keys[i], lora, loraID) {
		i++
	}
	if first && i == len(keys)-1 && keys[i].Kind == KeyString {
		return keys[i].Text, true
	}
	return "", i == len(keys)
}

// isLoRAKey reports whether k names the adapter lora (by name) or loraID
// (by number).
func isLoRAKey(k ExtraKey, lora string, loraID int64) bool {
	switch k.Kind {
	case KeyString:
		return lora != "" && k.Text == lora
	case KeyInt:
		return loraID > 0 && k.Int == loraID
	}
	return false
}

// seedOf is the chain seed of a first block under model, LoRA adapter and
// cache salt: the same seed the request side computes for a request with
// those keys (blockhash.Identity).
func seedOf(model, lora, salt string) blockhash.Hash {
	return blockhash.Seed(blockhash.Identity(model, lora, salt))
}

// String renders the keys as a tuple, for logs: strings quoted, integers in
// decimal, other elements in their canonical rendering.
func (k BlockKeys) String() string {
	var b strings.Builder
	b.WriteByte('(')
	for i, e := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		switch e.Kind {
		case KeyString:
			b.WriteString(strconv.Quote(e.Text))
		case KeyInt:
			b.WriteString(strconv.FormatInt(e.Int, 10))
		default:
			b.WriteString(e.Text)
		}
	}
	b.WriteByte(')')
	return b.String()
}
