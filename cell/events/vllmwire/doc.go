// Package vllmwire is the codec for the KV-cache events vLLM and SGLang
// publish over ZMQ. It is pure: no sockets, no goroutines. The ZMQ transport
// hands it frames and gets back an events.Batch to apply; the test publisher
// and the engine simulator use its encoder.
//
// # Messages
//
// A live message has three frames [topic, seq, payload]. The topic is
// kv@<pod>@<model> (see ParseTopic: the pod ends at the second '@', the model
// is the rest and may contain '/' and '@'). seq is an 8-byte big-endian
// uint64 counting from 0 at each engine start. A replay stream sends frames
// [seq, payload] and ends with seq ReplayEndSeq and an empty payload; its
// payloads are decoded with DecodePayload.
//
// # Payload
//
// The payload is one msgpack EventBatch, as an array or (newer engines) a map:
//
//	[ts, events, data_parallel_rank]        third element nil or absent
//	{"ts": ts, "events": events, "data_parallel_rank": rank}
//
// ts is a float (an integer is accepted). Each event is an array whose first
// element is its tag, with trailing fields absent or nil when they are
// defaults, or a map with "type" and the same field names in any order:
//
//	["BlockStored", block_hashes, parent_block_hash, token_ids, block_size,
//	    lora_id, medium, lora_name, extra_keys, group_idx,
//	    kv_cache_spec_kind, kv_cache_spec_sliding_window]
//	["BlockRemoved", block_hashes, medium, group_idx]
//	["AllBlocksCleared"]
//
// For example, an engine storing two blocks of 4 tokens (vLLM uses 16) sends,
// shown as JSON:
//
//	[1718000000.5, [["BlockStored", [11, 12], null, [1,2,3,4,5,6,7,8], 4, null, "GPU"]], 0]
//
// or the same event in map form:
//
//	{"type": "BlockStored", "block_hashes": [11, 12], "parent_block_hash": null,
//	 "token_ids": [1,2,3,4,5,6,7,8], "block_size": 4, "medium": "GPU"}
//
// # Decoding rules
//
//   - Block hashes are unsigned integers (above 2^63 too), negative integers
//     (SGLang; the two's-complement bits are the hash), or str/bin of at
//     least 8 bytes (SHA-256 hashes are 32), reduced to their last 8 bytes
//     read big-endian. A parent hash of nil or 0 means the first block of a
//     chain (HasParent false).
//   - Token ids must fit uint32. When token_ids is present and not empty
//     its length must be len(block_hashes) * block_size; block_size must be
//     positive. Empty or absent token_ids decode (snapshot-style events
//     carry none); the applier cannot index such blocks and counts them.
//   - extra_keys is nil or one entry per block; each entry is flattened to
//     one string (see readExtraKeys in extrakeys.go: nil is "", a string is
//     itself, anything else a canonical text such as ["mmhash",0]).
//   - lora_name becomes LoRAName; an engine that sends only a positive
//     lora_id gets LoRAName "lora_id:<n>". kv_cache_spec_kind is read and
//     ignored; kv_cache_spec_sliding_window becomes SlidingWindow.
//   - Unknown map keys, and array elements beyond the known fields, are
//     skipped (newer engines); unknown tags or types are ErrUnknownTag.
//   - Sizes are bounded by Limits; no array is allocated larger than the
//     bytes left in the payload.
//
// Errors wrap one sentinel each (ErrFrameCount, ErrBadSeq, ErrBadTopic,
// ErrMsgpack, ErrUnknownTag, ErrBadEvent, ErrTooLarge); Reason maps them to
// metric labels. Decoding uses the low-level msgpack/v5 Decoder for headers
// and scalars, and scans the payload bytes directly for hash and token arrays;
// it reuses the Batch's slices and never panics.
package vllmwire
