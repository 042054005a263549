#!/usr/bin/python3
"""Writes fixtures.json: KV-event payloads in every shape vLLM and SGLang are
documented to send (see the README here), encoded with Python's msgpack, an
encoder independent of the cell's own, as engines built on msgspec produce
them: tuples and lists as arrays, None as nil, bytes as bin, negative ints as
signed integers.

Run from anywhere (Debian python3-msgpack): /usr/bin/python3 gen.py
The test (cell/conformance_test.go) reads only fixtures.json."""
import json, os, msgpack

BS = 16
TOKENS = list(range(1000, 1064))  # 4 router blocks of 16
H = [0x1000000000000001 * (i + 1) for i in range(4)]  # engine block hashes
HIGH = [(1 << 63) + 7 * (i + 1) for i in range(4)]    # hashes above 2^63

def chunks(toks, n):
    return [toks[i:i + n] for i in range(0, len(toks), n)]

def pack(batch):
    return msgpack.packb(batch, use_bin_type=True).hex()

def stored_arr(hashes, parent, toks, bs, *tail):
    return ["BlockStored", hashes, parent, toks, bs, *tail]

def stored_map(**fields):
    return {"type": "BlockStored", **fields}

fixtures = []
def fx(name, about, batches, want, model="m", salt="", topic=None):
    fixtures.append({"name": name, "about": about, "batches": [pack(b) for b in batches],
                     "query": {"model": model, "salt": salt}, "want_depth": want,
                     **({"topic": topic} if topic is not None else {})})

# vLLM, legacy array form.
fx("vllm_array_oldest", "2-element batch [ts, events]; BlockStored with 5 fields (before medium)",
   [[1.0, [stored_arr(H, None, TOKENS, BS, None)]]], 4)
fx("vllm_array_medium", "7 fields (medium, lora_name), rank nil", [[1.0, [stored_arr(H, None, TOKENS, BS, None, "GPU", None)], None]], 4)
fx("vllm_array_trailing_nils", "12 fields, every trailing one nil, rank 0",
   [[1.5, [stored_arr(H, None, TOKENS, BS, None, "GPU", None, None, None, None, None)], 0]], 4)
fx("vllm_array_trimmed", "6 fields: medium only", [[1.5, [stored_arr(H, None, TOKENS, BS, None, "GPU")], 0]], 4)
fx("vllm_array_future_element", "13 fields: one this router does not know", [[1.5, [stored_arr(H, None, TOKENS, BS, None, "GPU", None, None, 0, "full_attention", None, "LOCAL")], 0]], 4)
fx("vllm_array_parent_zero", "a first block whose parent is 0, not nil", [[1.0, [stored_arr(H, 0, TOKENS, BS, None, "GPU")], 0]], 4)
fx("vllm_array_two_events", "a chain stored by two events, the second naming its parent",
   [[1.0, [stored_arr(H[:2], None, TOKENS[:32], BS, None, "GPU"), stored_arr(H[2:], H[1], TOKENS[32:], BS, None, "GPU")], 0]], 4)
fx("vllm_array_two_batches", "a chain stored over two batches", [
   [1.0, [stored_arr(H[:3], None, TOKENS[:48], BS, None, "GPU")], 0],
   [1.1, [stored_arr(H[3:], H[2], TOKENS[48:], BS, None, "GPU")], 0]], 4)

# vLLM, map form.
fx("vllm_map_0_23", "map events before extra_keys: type, block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium",
   [[1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS, lora_id=None, medium="GPU")], 0]], 4)
fx("vllm_map_0_26", "vLLM 0.26: lora_name nil, extra_keys one nil per block, group_idx 0, kv_cache_spec_* fields",
   [[1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS, lora_id=None, medium="GPU",
                      lora_name=None, extra_keys=[None] * 4, group_idx=0, kv_cache_spec_kind="full_attention",
                      kv_cache_spec_sliding_window=None)], 0]], 4)
fx("vllm_map_keys_reordered", "map keys in another order, with keys this router does not know",
   [[1.0, [{"token_ids": TOKENS, "locality": "LOCAL", "block_size": BS, "type": "BlockStored", "block_hashes": H,
            "ownership": {"owner": "x"}, "parent_block_hash": None}], 0]], 4)
fx("vllm_map_batch", "the batch itself as a map {ts, events, data_parallel_rank}",
   [{"ts": 1.0, "events": [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS)], "data_parallel_rank": 0}], 4)
fx("vllm_engine_block_64", "engine block size 64, router 16: one engine block, four router blocks",
   [[1.0, [stored_map(block_hashes=H[:1], parent_block_hash=None, token_ids=TOKENS, block_size=64, medium="GPU")], 0]], 4)
fx("vllm_extra_keys_salt", "cache salt in the first block's extra keys: matches a request with that cache_salt",
   [[1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS, extra_keys=[["tenant-a"], None, None, None])], 0]], 4, salt="tenant-a")
fx("vllm_extra_keys_salt_unsalted_query", "the salted chain does not match a request without the salt",
   [[1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS, extra_keys=[["tenant-a"], None, None, None])], 0]], 0)
fx("vllm_extra_keys_lora", "LoRA adapter in lora_name and every block's extra keys: matches a request naming the adapter as its model",
   [[1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS, lora_id=3, lora_name="sql-adapter",
                      extra_keys=[["sql-adapter"]] * 4)], 0]], 4, model="sql-adapter")
fx("vllm_extra_keys_lora_id", "older vLLM: numeric lora_id in the extra keys; indexed, never matching a base-model request",
   [[1.0, [stored_arr(H, None, TOKENS, BS, 3, "GPU", None, [[3]] * 4)], 0]], 0)
fx("vllm_extra_keys_multimodal", "an image in the third block: the two blocks before it are indexed",
   [[1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS,
                      extra_keys=[None, None, [["9f2c-image-sha", 5]], None])], 0]], 2)
fx("vllm_removed_tail", "BlockRemoved of the last two blocks", [
   [1.0, [stored_arr(H, None, TOKENS, BS, None, "GPU")], 0],
   [1.1, [["BlockRemoved", H[2:], "GPU"]], 0]], 2)
fx("vllm_removed_middle", "BlockRemoved of a middle block takes its descendants with it", [
   [1.0, [stored_arr(H, None, TOKENS, BS, None, "GPU")], 0],
   [1.1, [{"type": "BlockRemoved", "block_hashes": [H[1]], "medium": "GPU", "group_idx": 0}], 0]], 1)
fx("vllm_all_cleared", "AllBlocksCleared after a store", [
   [1.0, [stored_arr(H, None, TOKENS, BS, None, "GPU")], 0],
   [1.1, [["AllBlocksCleared"]], 0]], 0)
fx("vllm_cpu_offload", "the blocks offloaded to CPU and evicted from GPU stay held", [
   [1.0, [stored_arr(H, None, TOKENS, BS, None, "GPU"), stored_arr(H, None, TOKENS, BS, None, "CPU")], 0],
   [1.1, [["BlockRemoved", H, "GPU"]], 0]], 4)
fx("vllm_hybrid_sliding_window", "a hybrid model: the full-attention group is indexed, the sliding-window group is not", [
   [1.0, [stored_map(block_hashes=H, parent_block_hash=None, token_ids=TOKENS, block_size=BS, group_idx=0, kv_cache_spec_kind="full_attention"),
          stored_map(block_hashes=[h + 1 for h in H], parent_block_hash=None, token_ids=TOKENS, block_size=BS, group_idx=1,
                     kv_cache_spec_kind="sliding_window", kv_cache_spec_sliding_window=128)], 0]], 4)

# Hash encodings.
fx("hashes_uint64_high", "hashes above 2^63 as msgpack uint64", [[1.0, [stored_arr(HIGH, None, TOKENS, BS, None, "GPU")], 0]], 4)
fx("hashes_negative_int64", "hashes above 2^63 as negative int64 (SGLang)",
   [[1.0, [stored_arr([h - (1 << 64) for h in HIGH[:2]], None, TOKENS[:32], BS, None, "GPU"),
           stored_arr([h - (1 << 64) for h in HIGH[2:]], HIGH[1] - (1 << 64), TOKENS[32:], BS, None, "GPU")], 0]], 4)
fx("hashes_bin32", "32-byte hashes as bin (the last 8 bytes, big-endian, are the hash)",
   [[1.0, [stored_arr([bytes(24) + h.to_bytes(8, "big") for h in H[:2]], None, TOKENS[:32], BS, None, "GPU"),
           stored_arr([bytes([0xee] * 24) + h.to_bytes(8, "big") for h in H[2:]], bytes(24) + H[1].to_bytes(8, "big"), TOKENS[32:], BS, None, "GPU")], 0]], 4)

# SGLang: tagged maps with None fields omitted, batch [ts, events, attn_dp_rank], page size 1.
sg = [(1 << 63) + 1000 + i for i in range(64)]
fx("sglang_page_1", "SGLang page size 1: 64 one-token blocks, negative int64 hashes, None fields omitted", [
   [1.0, [{"type": "BlockStored", "block_hashes": [h - (1 << 64) for h in sg], "token_ids": TOKENS, "block_size": 1, "medium": "GPU"}], None]], 4)
fx("sglang_cache_salt", "SGLang's own cache_salt field salts the chain", [
   [1.0, [{"type": "BlockStored", "block_hashes": H, "token_ids": TOKENS, "block_size": BS, "cache_salt": "tenant-b"}], None]], 4, salt="tenant-b")
fx("sglang_cpu_pinned", "SGLang's CPU tier is CPU_PINNED", [
   [1.0, [{"type": "BlockStored", "block_hashes": H, "token_ids": TOKENS, "block_size": BS, "medium": "CPU_PINNED"}], 0]], 4)
fx("sglang_metadata", "SGLang BlockStored with metadata and session_id fields", [
   [1.0, [{"type": "BlockStored", "block_hashes": H, "token_ids": TOKENS, "block_size": BS, "session_id": "s-1",
           "metadata": {"priority": 1, "hit": [1, 2]}}], 2]], 4)

out = {"about": "KV-event payload fixtures; see README.md. Written by gen.py.", "router_block_size": 16,
       "tokens": TOKENS, "fixtures": fixtures}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures.json")
with open(path, "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
print("wrote %d fixtures to %s" % (len(fixtures), path))
