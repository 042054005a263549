// Package replay is the load generator: it replays a Mooncake trace against
// any OpenAI-compatible endpoint (an engine pod, a cell, the global
// endpoint) and measures each request as a client sees it.
//
// # Requests
//
// Each trace record becomes one POST /v1/completions whose prompt is an
// array of token ids: the record's hash ids expanded to 512 deterministic
// tokens each (trace.AppendTokens), cut to input_length. Equal hash ids give
// equal tokens, so the trace's prefix sharing reaches the engines' prefix
// caches exactly. max_tokens is output_length (optionally capped); streamed
// requests ask for stream_options.include_usage so the last chunk carries
// prompt_tokens and prompt_tokens_details.cached_tokens.
//
// # Schedule
//
// The replay is open loop: request i is sent at
// (timestamp_i - timestamp_0) * TimeScale / Rate after the start, whether or
// not earlier requests have finished, as real users arrive. Concurrency caps
// the requests in flight; a request that finds the cap reached waits for a
// slot and is counted as delayed, so a report says when the schedule was not
// kept.
//
// # Measurements
//
// A Result records, per request: the time to the first SSE chunk that
// carries generated text (TTFT), the gaps between later text chunks
// (inter-token latency), the end-to-end latency, usage (prompt, cached and
// completion tokens), the pod that served it (from a response header) and,
// on failure, the kind of error: connect, http_4xx, http_5xx, timeout or
// stream_broken. Without streaming the first token arrives with the last, so
// TTFT equals the end-to-end latency there. Package report turns Results
// into percentiles, plots and a report.
package replay
