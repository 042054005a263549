// Package enginesim simulates vLLM engine pods with prefix caching, close
// enough on the wire for a cell to route to them as to real engines: the
// OpenAI API, /tokenize, /metrics, KV events over ZMQ, and the
// kv_transfer_params of disaggregated prefill and decode.
//
// # Endpoints
//
// A Pod serves POST /v1/completions and /v1/chat/completions (text or
// token-array prompts; streaming as server-sent events "data: {...}" ending
// with "data: [DONE]", honouring stream_options.include_usage), GET
// /v1/models, POST /tokenize (vLLM's shape: {"model", "prompt" |
// "messages", "add_special_tokens"} to {"count", "max_model_len", "tokens",
// "token_strs"}), GET /health and GET /metrics. Every answer's usage
// carries prompt_tokens_details.cached_tokens. Malformed requests get
// OpenAI error bodies (400, 404 for another model, 405, 413). Batched
// prompts and n > 1 are not simulated: a batch is rejected, n is ignored.
//
// # Tokens
//
// Text is tokenised by Tokenizer, a deterministic word hasher (see its
// doc): /tokenize and the completion endpoints of a pod agree, which is
// what a cell that asks the pod's /tokenize needs. Chat messages are
// rendered with RenderChat's template and tokenised. A completion prompt
// gets TokenBOS in front unless add_special_tokens is false; a chat does
// not (the template starts with it). Generated tokens are a deterministic
// function of the prompt, rendered as " t<id>" words.
//
// Config.Tokenizer replaces the word hasher: an HFTokenizer tokenizes with
// a Hugging Face tokenizer.json and a built-in chat template (package
// cachekey/tokenizer), exactly as cells and the global tier configured with
// the same file and template do, so that the routers' hashes of a text
// prompt or chat are the blocks the pod caches (loadtest/fleet uses it).
//
// # Load metrics
//
// GET /metrics reports the running batch under vLLM's names, so that a cell
// reading the engines' own load (cell/enginemetrics) sees what it would see
// from vLLM: vllm:num_requests_waiting and vllm:num_requests_running,
// vllm:kv_cache_usage_perc as the blocks the running requests hold (prompt
// plus output, as the router counts them) over the capacity (blocks cached
// for reuse but unused are free, as in vLLM), vllm:cache_config_info with
// num_gpu_blocks and block_size, and, when Config.LoRAAdapters is set,
// vllm:lora_requests_info (running_lora_adapters, waiting_lora_adapters,
// max_lora; the value is the reading's time). A request naming an adapter
// as its model is served as the base model: no adapter weights are
// simulated.
//
// # KV cache and events
//
// The KV cache is package engine's model: Config.Blocks blocks of
// Config.BlockSize tokens with leaf-first LRU eviction, each named by the
// chained hash of package blockhash under the seed of Config.Model and the
// request's cache_salt (no LoRA): as in vLLM, requests with different salts
// share no block, and a chain stored under a salt carries it as its first
// block's extra key in the BlockStored event. A request's hit is the cached
// prefix of its chain when it enters the running batch, never covering the
// last prompt token (vLLM recomputes the last block of a full hit);
// cached_tokens is that hit in tokens. When the prefill completes, the
// prompt's blocks are admitted and one batch is published through
// vllmpub, with a BlockRemoved event (medium GPU) for the blocks evicted
// and a BlockStored event (hashes, parent hash, token ids, block size,
// medium GPU) for the blocks stored; the engine hashes are the chained
// hashes themselves, so an index fed by a pod holds exactly
// Pod.CachedBlocks. Admission and publishing share one lock, so batches are
// numbered in the order the cache changed. Only prompt blocks are cached;
// generated tokens are not. The topic is kv@<pod id>@<model>, the form
// array or map (Config.Events.Form), with vLLM's replay socket.
//
// # Timing model
//
// A request waits in a FIFO queue until one of Config.MaxRunning slots of
// the running batch is free and its KV blocks (prompt plus output) fit in
// Config.Blocks beside those of the requests running, as vLLM's scheduler
// admits the waiting head only when its blocks can be allocated (a
// request alone always runs; the head that does not fit holds the queue
// behind it), then prefills for PrefillPerToken (default
// 20µs) per prompt token neither cached nor transferred, emits its first
// token, and decodes every further token in DecodePerToken (default 2ms).
// Every modelled duration is multiplied by Config.TimeScale before the pod
// sleeps it (0: no sleeping at all). Responses report the unscaled
// accounting in headers (HeaderPrefillMs, HeaderPrefillTokens,
// HeaderCachedTokens, HeaderQueueMs), so tests compare cache hits without
// timing the wall clock. A client that goes away, waiting or running,
// frees its slot (or queue place) at once, and a prefill it abandons
// stores nothing.
//
// # Disaggregated prefill and decode
//
// A request with kv_transfer_params.do_remote_decode true (the prefill leg
// built by openai.PrefillBody) is prefilled, answered with one token and
// kv_transfer_params {"do_remote_prefill": true, "do_remote_decode": false,
// "remote_engine_id": pod id, "remote_block_ids": one id per prompt block,
// "remote_host", "remote_port": the pod's HTTP host and port, "tp_size":
// 1}. A request with do_remote_prefill true (the decode leg) counts the
// prompt tokens covered by remote_block_ids as transferred: they cost no
// prefill time and their blocks are stored in the pod's own cache, with
// their events, as vLLM's decode instances do. RolePrefill and RoleDecode
// pods reject the other leg; every role serves plain requests.
//
// # Fleets
//
// StartFleet runs many pods in one process, each with its own HTTP
// listener and ZMQ sockets on 127.0.0.1:0; Pod exposes the addresses a cell
// needs (HTTPAddr, ZMQEndpoint, ReplayEndpoint) and Stats. The loadtest
// command's "enginesim" subcommand starts one from the command line.
package enginesim
