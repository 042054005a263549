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
package overhead
