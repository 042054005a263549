// Package trace reads request traces in the Mooncake format and expands them
// into token ids.
//
// A Mooncake trace (FAST '25, kvcache-ai/Mooncake) is JSON Lines: one request
// per line, {"timestamp": ms, "input_length": tokens, "output_length": tokens,
// "hash_ids": [int, ...]}. One hash id stands for one block of 512 prompt
// tokens, so len(hash_ids) == ceil(input_length/512), and ids are assigned so
// that the trace forms a prefix tree: equal ids mean equal prefixes.
//
// Reader streams a trace line by line and reports bad lines with their line
// number (bad JSON, missing fields, non-positive lengths, a hash_ids list
// whose length does not match input_length). DecodeLine is the single-line
// decoder it uses. AppendTokens expands one hash id into 512 deterministic
// token ids, so that a trace can be replayed through the real block hasher
// at any engine block size: the same id always gives the same tokens.
package trace
