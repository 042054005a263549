// Package overhead measures what the cell adds to a request: the same
// requests sent straight to a pod and through a cell in front of it,
// interleaved one by one in the same run so that machine noise hits both
// sides alike, streaming and not. The pod is a minimal in-process
// OpenAI-compatible server that answers at once, so what is measured is the
// router: parsing, the routing decision, the proxy hop and the relay.
package overhead
