// Package epp is the Endpoint Picker Protocol (Gateway API Inference
// Extension, protocol v1) on the picker's side: a gRPC
// envoy.service.ext_proc.v3.ExternalProcessor server that a gateway (Envoy,
// Istio, kgateway, Envoy Gateway, GKE, agentgateway...) calls for every
// request of an InferencePool, so that the gateway, not a proxy of ours,
// carries the request to the endpoint the picker chose. Both tiers serve
// it: the cell picks a pod (package cell), the global tier a cell's
// gateway (package global); each implements Picker, the one seam.
//
// # The exchange
//
// One gRPC stream is one HTTP request, in FULL_DUPLEX_STREAMED body mode:
//
//  1. Request headers. The server keeps them (":method" and ":path"
//     apart), reads the subset hint (filter metadata envoy.lb.subset_hint /
//     x-gateway-destination-endpoint-subset, a list or a comma-separated
//     string) and admits the request by its headers (Admitter: the API key
//     in Authorization and the tenant's limits, as in proxy mode). A
//     refusal is answered at once. Nothing else is answered yet: the
//     headers' answer carries the pick, which needs the body.
//  2. Request body frames, assembled up to Config.MaxBodyBytes (past it:
//     413, no pick). At the end of stream (or at the request trailers) the
//     body of /v1/completions and /v1/chat/completions is parsed (400 in
//     OpenAI's shape when it does not parse), Picker.Pick runs, and the
//     server sends the headers' answer: header x-gateway-destination-
//     endpoint and dynamic metadata envoy.lb / x-gateway-destination-
//     endpoint, both "ip:port" of the pick then its ordered fallbacks,
//     comma-separated; clear_route_cache; the picker's header changes.
//     Then the body, unchanged or as the picker rewrote it (with its
//     Content-Length), as streamed body mutations of at most
//     BodyChunkBytes, the last one ending the stream (not when trailers
//     follow; their answer is empty).
//  3. The picker's refusals are ImmediateResponses in OpenAI's error
//     shape: ErrNoEndpoint 503 (nothing eligible, an empty subset
//     included), ErrShed 429, an *Error as the picker wrote it (Answer
//     records any http.ResponseWriter writer), anything else 500.
//  4. Response headers: the served endpoint (metadata envoy.lb /
//     x-gateway-destination-endpoint-served) and ":status" go to the pick's
//     Exchange, whose headers are added to the response. Response body
//     frames go to Exchange.Body and are passed back unchanged; the end of
//     stream (or the response trailers) is Exchange.Finish(true). A stream
//     that ends before (the client went away, the gateway reset it) is
//     Finish(false): the pick's load and learning are undone exactly as
//     proxy mode undoes a cancelled call.
//
// A gateway configured with another request body mode cannot hold the
// headers until the body arrived; such a request is refused (500,
// ErrBodyMode). Response bodies are echoed as streamed mutations in
// FULL_DUPLEX_STREAMED and passed without mutation in the other modes.
//
// Health: NewHealth serves the gRPC health services the protocol names,
// liveness (serving while the process serves), readiness and
// envoy.service.ext_proc.v3.ExternalProcessor (serving while the daemon
// is ready).
//
// The wire behaviour was read from sigs.k8s.io/gateway-api-inference-
// extension v1.6.0 (its protocol proposal 004, pkg/common/envoy and the
// reference picker lwepp); nothing of it is copied. Package epptest is the
// gateway's side for tests, run against this server and against lwepp.
package epp
