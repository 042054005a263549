package blockhash

import (
	"encoding/binary"

	"github.com/zeebo/xxh3"
)

// Keys are the parts of cache identity other than the tokens: two requests
// with the same tokens share KV blocks only if their Keys are equal. Seed
// folds them into the parent of the first block of a chain.
//
// Absent and empty: a string field that is "" means "none" (no LoRA adapter,
// no cache salt, no route template); Go cannot tell an absent string from an
// empty one, and no engine gives an empty adapter name or salt a meaning of
// its own. Likewise a nil MultimodalIDs and an empty non-nil one are equal
// (no multimodal inputs). VirtualLayer is different: layer 0 is a real layer,
// so HasVirtualLayer says whether the field is present, and a chain with
// HasVirtualLayer true and VirtualLayer 0 never matches one without a
// virtual layer.
type Keys struct {
	// Model is the served model's name (for example the engine's
	// --served-model-name). Different models never share KV blocks.
	Model string

	// LoRA is the name of the LoRA adapter applied to the request, or "" for
	// the base model. An adapter changes every layer's keys and values.
	LoRA string

	// CacheSalt is a per-tenant salt (vLLM's cache_salt) that isolates one
	// tenant's prefix cache from another's, or "" for none.
	CacheSalt string

	// MultimodalIDs are the identities (typically content hashes) of the
	// multimodal inputs of the prompt, in order of appearance, or nil for
	// none. Order matters: the same images in another order are another
	// prompt. An empty string in the list is a present (empty) id.
	MultimodalIDs []string

	// RouteTemplate is the route template id of a looped or router
	// transformer (which sequence of physical blocks a token's computation
	// follows), or "" for an ordinary transformer.
	RouteTemplate string

	// VirtualLayer is the virtual layer id of a looped or router transformer,
	// as computed by the VirtualLayer function. It is ignored unless
	// HasVirtualLayer is true.
	VirtualLayer uint32

	// HasVirtualLayer says whether VirtualLayer is present. It is false for
	// ordinary transformers, whose cache has no virtual layer dimension.
	HasVirtualLayer bool
}

// VirtualLayer returns the virtual layer id of a looped or router transformer
// at route step routeStep on physical block physicalBlock of
// numPhysicalBlocks: routeStep*numPhysicalBlocks + physicalBlock. The caller
// keeps physicalBlock < numPhysicalBlocks (so that distinct pairs give
// distinct ids) and the product within uint32; the arithmetic otherwise wraps
// modulo 2^32.
func VirtualLayer(routeStep, numPhysicalBlocks, physicalBlock uint32) uint32 {
	return routeStep*numPhysicalBlocks + physicalBlock
}

// SeedZero is the value Seed returns when the hash of the encoded Keys
// happens to be zero, so that a seed is never the reserved zero Hash. It is
// the first 64 bits of the fractional part of sqrt(3) (SHA-512's second
// initial value), chosen only for being a fixed, nonzero, unremarkable number.
const SeedZero Hash = 0xbb67ae8584caa73b

// seedDomain starts every encoded Keys, so that a seed never equals a hash of
// some other structure this project might feed to xxh3, and so that a change
// of encoding can be made visible by changing the version.
const seedDomain = "cellrouter/blockhash/seed/v1"

// Field tags of the encoding, one per Keys field, in encoding order.
const (
	tagModel byte = iota + 1
	tagLoRA
	tagCacheSalt
	tagMultimodal
	tagRouteTemplate
	tagVirtualLayer
)

// seedStackBuf is the size of the stack buffer Seed encodes into; larger Keys
// spill to the heap.
const seedStackBuf = 512

// Seed returns the seed of a chain under keys k: the parent hash of its first
// block. It is xxh3 of an unambiguous encoding of k (see appendKeys) and is
// never zero (a zero result is replaced by SeedZero). Equal Keys give equal
// seeds; any difference in any field gives a different seed, up to 64-bit
// collisions. Seed allocates only when the encoded keys exceed 512 bytes;
// callers that hash many prompts under the same keys may keep the result.
func Seed(k Keys) Hash {
	var stack [seedStackBuf]byte
	b := appendKeys(stack[:0], &k)
	return nonZero(xxh3.Hash(b), SeedZero)
}

// appendKeys appends the encoding of k to b and returns the extended slice.
//
// The encoding is: the length-prefixed seedDomain; then every field, always,
// in declaration order, each introduced by its tag byte. A string is its
// length as a little-endian uint64 followed by its bytes. MultimodalIDs is
// its count as a little-endian uint64 followed by each id as a string. The
// virtual layer is one byte (0 absent, 1 present), followed, when present,
// by the layer as a little-endian uint32. Every field is self-delimiting and
// all fields are always written in the same order, so two Keys have equal
// encodings exactly when they are equal under the rules documented on Keys.
func appendKeys(b []byte, k *Keys) []byte {
	b = appendString(b, seedDomain)
	b = append(b, tagModel)
	b = appendString(b, k.Model)
	b = append(b, tagLoRA)
	b = appendString(b, k.LoRA)
	b = append(b, tagCacheSalt)
	b = appendString(b, k.CacheSalt)
	b = append(b, tagMultimodal)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(k.MultimodalIDs)))
	for _, id := range k.MultimodalIDs {
		b = appendString(b, id)
	}
	b = append(b, tagRouteTemplate)
	b = appendString(b, k.RouteTemplate)
	b = append(b, tagVirtualLayer)
	if k.HasVirtualLayer {
		b = append(b, 1)
		b = binary.LittleEndian.AppendUint32(b, k.VirtualLayer)
	} else {
		b = append(b, 0)
	}
	return b
}

// appendString appends s, prefixed by its length as a little-endian uint64.
func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// Identity returns the Keys of a request (or of an engine's blocks) served
// under model, with LoRA adapter lora ("" for the base model) and cache salt
// salt ("" for none): the one place both the request side and the event side
// build cache identity from, so the two always agree.
//
// An adapter's name stands for the model: OpenAI clients name a vLLM LoRA
// adapter in the request's "model" field (the name it was loaded under), and
// the engine reports that same name as the blocks' lora_name beside the base
// model. Keying adapter blocks by the adapter's name alone makes the two
// sides meet; blocks of an adapter never share a prefix with the base
// model's (the engine mixes the adapter into every block hash), and they do
// not here either.
func Identity(model, lora, salt string) Keys {
	if lora != "" {
		model = lora
	}
	return Keys{Model: model, CacheSalt: salt}
}
