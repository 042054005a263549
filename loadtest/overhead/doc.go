// Package overhead measures what the cell adds to a request: the same
// requests sent straight to a pod and through a cell in front of it,
// interleaved one by one in the same run so that machine noise hits both
// sides alike, streaming and not. The pod is a minimal in-process
// OpenAI-compatible server that answers at once, so what is measured is the
// router: parsing, the routing decision, the proxy hop and the relay.
//
// Config.Prompt chooses what both sides send: token ids, a text prompt or
// a chat, which the cell tokenizes with the demo tokenizer
// (cell/tokenizer.DemoJSON). With Config.Global the run also measures the
// global tier in front of the cell, interleaved with the cell alone, for
// every prompt kind: token prompts, text and chats tokenized in process,
// and text and chats tokenized through the cell's /tokenize. The cell's
// first pod holds the prompts' shared prefix (the requests differ in their
// last words), so every global request is routed by summary with a real
// gRPC probe; the run fails if any would go the cold path. The global
// tier's tokenization is also timed alone on fresh requests.
//
// With Config.TLS the run measures what mutual TLS costs on the global
// tier's hop to the cell (TLSHop): a second cell over the same pods serves
// mutual TLS with certificates of a CA made for the run, a second global
// tier probes it and hands off to it over mutual TLS, and token requests
// go through the plaintext and the mutual-TLS global tiers, interleaved
// one by one with the cell alone.
//
// # The whole path
//
// With Config.Path (the default) the run measures the whole path last:
// the pod called directly, the cell in front of it, and the global tier in
// front of the cell (token prompts, summary path: the cell's first pod
// holds the prefix). At each Config.Concurrency (1, 16, 64) that many
// clients send requests in a closed loop, each client taking the three
// tiers in turn, so every tier is measured under the same load, streaming
// and not; each tier's added p50 and p99 are differences of percentiles
// (cell minus pod, global minus cell, global minus pod). Report.Global is
// the headline: both tiers together against the pod at concurrency 1,
// non-streaming, and the global tier's max_rps.
//
// The rate ramp sends each tier open loop (latency counted from each
// request's scheduled time) at each of Config.RampRates for RampStep,
// beside a reference stream to the pod at a quarter of the rate, and
// stops at the first rate the tier does not sustain: under 95% achieved,
// a request dropped (MaxInFlight pending) or failed, or an added p99 over
// twice the first step's (floored at 0.1 ms). CPU per request is the
// process's getrusage time over a fixed-rate run of each tier, twice in
// turn; the routers' share is the difference from the pod path (the
// client and the pod cost the same on every path). Everything runs in one
// process on the same cores, as a cell, its pods and a global tier would
// share a small machine; --cpuprofile writes a profile whose goroutines
// carry the label tier=pod|cell|global|client.
package overhead
