// Package proxy is the execution layer of the cell: it carries out a routing
// decision by relaying an OpenAI-compatible request to the chosen pod, or to
// a prefill pod and then a decode pod for disaggregated serving.
//
// # Model
//
// The routing pipeline hands Forward a ranked list of targets. Forward sends
// the request to the first; while no byte has reached the client, a failure
// (connection refused, a 5xx status, a timeout waiting for headers, a read
// error before the first body byte) moves on to the next target, up to
// Config.MaxAttempts. The response is held back until its first body byte has
// arrived, so a pod that answers headers and then dies is still retried.
// Once a byte has been written to the client the attempt is committed: a
// later failure ends the client's response (Forward returns an error
// wrapping ErrMidStream, and the handler should panic(http.ErrAbortHandler)
// so that the client sees a broken stream rather than a clean end).
//
// Errors reach the client in OpenAI's shape and in words that hold for any
// fleet: a failure of the proxy itself (no target, timeouts, pods that
// cannot be reached) has a message without pod ids or addresses
// (FailureMessage), the returned error carrying those for the caller's
// logs; a pod's error answer is relayed with its status, its body passed
// through when it is an OpenAI error and replaced otherwise. ServeModel
// answers GET /v1/models/{id} from the targets' model lists.
//
// Response headers are relayed from an allow-list
// (Config.RelayResponseHeaders, DefaultRelayResponseHeaders: what
// describes the body, Retry-After, X-Request-Id, OpenAI's openai-* and
// x-ratelimit-*), never the hop-by-hop ones, and never one whose value
// names the upstream's host: an engine's own headers (enginesim's
// X-Enginesim-Pod, a load balancer's cookie, Server) stay inside the
// fleet. The callers' own headers (Hooks.OnResponse) are set after.
//
// Server-sent events are relayed chunk by chunk, each flushed at once: the
// proxy never buffers a response. While chunks pass, a small scanner looks
// for a "usage" object (the body of a non-streamed response, the last chunk
// of a stream with stream_options.include_usage) and reports it in Result.
//
// Cancellation: every upstream request runs under the client request's
// context, so a client that goes away cancels the pod's request at once
// (the connection to the pod is closed, which vLLM takes as an abort),
// including the prefill leg of disaggregated serving.
//
// # Frozen targets
//
// A stopped process (SIGSTOP, a hung host) keeps accepting connections and
// says nothing, so neither a refused connection nor a header timeout finds
// it. Each attempt has a watch (Config.Watch). Its first-byte bound is
// max(FirstByteTimeout, FirstByteFactor (1) x p99 of the target's recent times
// to first byte of streamed responses), capped at FirstByteTimeoutMax.
// When an attempt made no progress for the bound (no first body byte, then
// no chunk), the watch checks the target's liveness: a GET of
// LivenessPath (vLLM's /health, a cell's /healthz) within
// LivenessTimeout, concurrent checks of one target sharing one request.
// A target that answers is alive and keeps the attempt (a non-streamed
// response has no byte before generation ends; a long prefill is slow, not
// frozen); one that does not is frozen: before any byte reached the client
// the attempt is cancelled and the next target tried (ErrTimeout), so a
// frozen target costs a request at most the bound plus LivenessTimeout;
// once streaming, the stream ends with an SSE error event in OpenAI's
// shape (data: {"error":{...,"code":"upstream_stalled"}}) and Forward
// returns an error wrapping ErrMidStream and ErrTimeout. A stream whose
// target stays alive but sends nothing for StreamIdleTimeout ends the same
// way (code "stream_idle_timeout"). Without a LivenessPath the bound is a
// hard limit on the first byte, which suits only fleets where every
// request streams.
//
// Outlier ejection (Ejector, Envoy's model reduced): a target that timed
// out so (or whose connection failed, or that answered 5xx,
// ConsecutiveFailures times in a row) is ejected for BaseEjectionTime
// times its ejections in a row (capped at MaxEjectionTime), and after that
// until a liveness check (made on a goroutine of the proxy when a call or
// Ejected next looks at it) says it answers again. Forward and
// ForwardDisaggregated try ejected targets last, at most
// MaxEjectionPercent of a call's targets, so ejection never empties a
// fleet. Calls the proxy does not make (the global tier's probes) use
// Ejected, ReportFailure and ReportSuccess. WatchStats counts first-byte
// timeouts, stalled streams, ejections and readmissions.
//
// # Disaggregated prefill and decode
//
// ForwardDisaggregated follows vLLM's protocol (its NixlConnector and the
// proxies vLLM ships):
//
//  1. The prefill leg gets the request with "max_tokens": 1 (and
//     "max_completion_tokens": 1 when present), "stream": false,
//     "stream_options" removed and "kv_transfer_params":
//     {"do_remote_decode": true, "do_remote_prefill": false,
//     "remote_engine_id": null, "remote_block_ids": null,
//     "remote_host": null, "remote_port": null}.
//  2. Its JSON response carries "kv_transfer_params" (remote_engine_id,
//     remote_block_ids, remote_host, remote_port, tp_size...): where the
//     decode pod pulls the KV cache from.
//  3. The decode leg gets the original request with "kv_transfer_params" set
//     to that object, "do_remote_prefill": true and "do_remote_decode": false
//     forced, every other field passed through; its response is streamed to
//     the client. When the prefill returned no parameters (null or {}), the
//     decode leg gets the original request without kv_transfer_params and
//     does the prefill itself, as vLLM's proxies do.
//
// Both legs carry the same X-Request-Id (the client's, or a fresh random
// one), which vLLM uses as the request id. A prefill failure retries on the
// next prefill target; a decode failure before the first byte retries on the
// next decode target.
//
// # Trace context
//
// Every request header except the hop-by-hop ones (and Accept-Encoding: pod
// responses are relayed uncompressed) reaches the pod, so W3C traceparent
// and tracestate propagate as they came. Hooks.OnRequest sees each outgoing
// request and may inject the headers of a span of its own.
package proxy
