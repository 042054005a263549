// Package overhead measures what the cell adds to a request: the same
// requests sent straight to a pod and through a cell in front of it,
// interleaved one by one in the same run so that machine noise hits both
// sides alike, streaming and not. The pod is a minimal in-process
// OpenAI-compatible server that answers at once, so what is measured is the
// router: parsing, the routing decision, the proxy hop and the relay.
//
// Config.Prompt chooses what both sides send: token ids, a text prompt or
// a chat, which the cell tokenizes with the demo tokenizer
// (cachekey/tokenizer.DemoJSON). With Config.Global the run also measures the
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
// # Picker mode
//
// With Config.Picker (the default) the cell also serves its Endpoint
// Picker (epp_addr) and the same token requests go, interleaved one by
// one, to the pod directly, through the cell in proxy mode, through a
// gateway that asks the cell over ext_proc and then calls the picked pod
// itself (package internal/epp/epptest plays the gateway in process), and
// through the same gateway asking a picker that decides nothing (it names
// the pod at once). Report.Picker carries each mode's added latency
// against the pod and process CPU per request beyond the pod path's;
// picker minus the fixed picker is the cell's decision alone, since the
// in-process gateway's ext_proc work (which Envoy would do) costs more than
// the decision on this machine (README, Measured).
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
// carry the label tier=pod|cell|global|global-probed|global-remote|client.
//
// # Where the time goes
//
// Profiles of the whole path (--cpuprofile, each router's samples by the
// first of these found in their stacks; 2-core VM shared with four other
// sessions, load average 10 to 24, November 2026). Before the changes of
// issue 15 the global tier's CPU went to HTTP/1.1 framing (net/http,
// textproto, bufio: 29%), the probe (gRPC client, HTTP/2 framing,
// protobuf: 22%), socket syscalls (19%), the hand-off's relay (13%),
// parsing the 1k-token body (6%) and reading it (5%), tracing (3%) and
// metrics (2%); hashing, the summary search and the choice were under 1%
// each, and nothing logs on the hot path. The cell's went to HTTP/1.1
// framing (25%), answering the probe (gRPC server, protobuf and a second
// decision: 23%), syscalls (17%), the relay to the pod (16%), the decision
// (pipeline, index, load: 8%), parsing (5%), tracing (3%), the body (2%),
// metrics (1%) and hashing (under 1%). About a tenth of the process is the
// garbage collector and the runtime, which carry no label.
//
// So the probe was the largest part that is not the cost of an HTTP hop,
// and it decided nothing when the search leaves one candidate (a fleet of
// one cell, as here): the global tier now hands such a request off at
// once and the cell reports its pick's match in a response header (see
// package global). Spans and their attributes are no longer built when
// no tracer provider is installed (the gRPC tracing handler of the probe
// included: telemetry.GatedStats), and the cell looks its stage-time
// series up once per profile. After that the global tier's CPU is HTTP/1.1
// framing (30%), syscalls (23%), the relay (22%), parsing (17%) and the
// body read (6%), everything else under 1% each; the cell's is framing
// (27%), the relay (21%), syscalls (17%), parsing (8%), the decision (8%),
// tracing's W3C propagation and the probed twin's probes. What is left is
// the cost of one more HTTP/1.1 hop in Go per tier and of parsing the body
// at both tiers. The probe still runs whenever the search leaves two
// cells (by default it adds the least loaded other cell), where it costs
// about 0.2 ms at p50 and 110 to 250 us of CPU per request (the
// global_probed tier). Answering it in the hand-off (the cell executing
// only when its pick's cost is within a bound the other candidates'
// summaries cannot beat, and answering with its probe answer otherwise)
// would save the round trip only when that bound admits the pick: with
// the default cost, a pod running one other 1k-token request already
// carries more load than a whole prompt's prefill, so under load most
// such hand-offs would be declined and pay a body transfer more than
// today's probe. It is not done.
//
// One globald did not reach 5,000 requests per second here: the machine's
// two cores are shared with the cell, 16 simulated pods, the load
// generator and four other sessions. What bounds it is CPU: the whole
// global path costs about 470 us of process CPU per request (client and
// pod about 190, the cell about 170, the global tier about 105; medians of
// eight runs under that load), so even two idle cores would carry about
// 4,300 such requests per second; the global tier's own share would allow
// far more.
package overhead
