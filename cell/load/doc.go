// Package load tracks the router's view of each pod's load: the requests
// it sent there and the KV blocks they occupy, following the reference KV
// router's active-block accounting. A request's blocks are added when it is
// routed (all of its prompt and expected output blocks, the uncached part
// counted as prefill), its prefill part is marked done at its first token,
// and everything is freed when it ends or is cancelled. The pipeline reads a
// snapshot to score and filter pods; no engine metric is needed, so the view
// is as fresh as the router's own decisions.
package load
