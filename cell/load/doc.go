// Package load tracks the router's view of each pod's load: the requests
// it sent there and the KV blocks they occupy, following the reference KV
// router's active-block accounting. A request's blocks are added when it is
// routed (all of its prompt and expected output blocks, the uncached part
// counted as prefill), its prefill part is marked done at its first token,
// and everything is freed when it ends or is cancelled. The pipeline reads a
// snapshot to score and filter pods; no engine metric is needed, so the view
// is as fresh as the router's own decisions.
//
// Prefills (prefills.go) keeps, per pod, the prompts whose prefill has not
// ended: an engine stores a prompt's blocks only when its prefill ends, so
// the cell's prefix wait asks Deepest whether the pod it chose is still
// computing part of a request's prefix, and waits on that prefill's Done
// instead of sending a request that would compute the same blocks again.
package load
