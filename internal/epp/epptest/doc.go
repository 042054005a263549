// Package epptest is a gateway for tests: it plays the data plane's side
// of the Endpoint Picker Protocol over the real ext_proc gRPC stream, as
// Envoy does in FULL_DUPLEX_STREAMED mode: the request headers, the body
// in several frames, optional trailers, then (when the picker routed) a
// real HTTP call to the picked endpoint (the fallbacks after it while no
// byte came back), its response headers with the served endpoint in the
// metadata, the response body frame by frame, and trailers; or a
// cancellation in the middle of the response. It records what a gateway
// would do with each answer: the destination header and metadata, the
// body it forwards (streamed mutations, or the chunks unchanged), the
// response headers it adds, the ImmediateResponse it sends the client.
package epptest
