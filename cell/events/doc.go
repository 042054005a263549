// Package events is the transport-independent heart of the cell's event
// layer: it turns engine KV-cache events into writes to the cell's index.
//
// # Model
//
// Every transport (vLLM/SGLang ZMQ, NATS JetStream, a gRPC stream) decodes
// engine messages into Batch values and hands them to a Sink. The Applier is
// the Sink that feeds the index. A batch belongs to one holder: a pod, or one
// data-parallel rank of a pod ("pod#rank"), each with its own index slot.
//
// Engines name blocks with their own hashes and their own block size; the
// index names them with the router's chained hashes (package blockhash) at
// the router's block size. The Applier keeps, per holder, a bounded forest of
// the engine blocks it has seen (chains.go): for each engine block, its
// parent, its children, the router hashes it completed, and the router-chain
// state after it (the last router hash and the tokens of a router block not
// yet complete). With it the Applier
//
//   - extends a stored chain from its parent without the parent's tokens,
//     forming router blocks as engine blocks arrive (engine 16 and router 64
//     tokens: one router block per four engine blocks; engine 64 and router
//     16: four router blocks per engine block);
//   - drops a BlockStored whose parent it never saw (it does not guess);
//   - removes, with an engine block, every descendant of it the holder had,
//     which keeps the holder's indexed blocks prefix-closed as the index
//     requires (an engine cannot hit a block whose parent is gone).
//
// # Identity
//
// A block's hash depends on more than its tokens: the model, a LoRA
// adapter, a tenant's cache salt, multimodal inputs. The chain seed of a
// first block folds in the identity requests are hashed with
// (blockhash.Identity, extrakeys.go), so that a request finds exactly the
// blocks an engine could reuse for it:
//
//   - the model: the pod's configured model, else the batch's (a topic's),
//     else Config.DefaultModel (identity.go);
//   - the adapter: the event's lora_name, which OpenAI clients name as the
//     request's model;
//   - the cache salt: vLLM puts it in the extra keys of a prompt's first
//     block, SGLang in a field of its own.
//
// vLLM sends extra_keys as one entry per block, nil for a block without
// any. An entry's elements that map onto the identity above are folded in;
// any other (multimodal identifiers, prompt-embedding digests) has no
// request-side counterpart, and that block and its descendants are tracked
// but not indexed (ReasonExtraKeys). So are blocks stored without token
// ids (ReasonNoTokens): the router cannot hash them.
//
// A publisher may name a configured pod by its address instead of its id
// (vLLM topics commonly do): its batches go to that pod. A publisher that
// names neither is a new, discovered pod, unless Config.RefuseUnknownPods
// (the cell's default), which drops its batches (ReasonUnknownPod) before
// any holder, slot or registry entry is made for it; Admits lets a
// transport ask first.
//
// # Bounds and eviction
//
// One holder may index at most its bound of router blocks
// (PodSpec.MaxIndexBlocks, else Config.MaxIndexBlocksPerPod) and track at
// most Config.MaxBlocksPerPod engine blocks, so that one event stream (a
// broken engine, or anyone who can reach a bind socket) cannot fill the
// index for every pod. Past either bound a new block evicts the holder's
// least recently stored or matched leaf (evict.go, leaves.go: a heap of
// the forest's leaves by stamp; a block takes the stamp of the blocks
// removed from under it), which keeps its indexed blocks prefix-closed.
// When the index is nearly full, a holder's limit is also its fair share
// of it (fairshare.go: the index's capacity divided by the holders, at
// least the configured pods); when it is full nonetheless (it refused a
// store), every holder over its fair share evicts down to that share and
// the refused batch is applied again, so a holder within its share never
// pays for another's flood. Applier.Touch marks the deepest block a routed
// request matched, restamped when it comes up for eviction;
// Applier.EnforceBounds trims restored holders.
//
// # Order and repair
//
// Engines number their batches. A SeqTracker per holder (seq.go) applies
// batches in order, drops duplicates and old replays, reports a gap as a
// GapError naming the missing range (the transport asks the engine to replay
// it; until then the holder is degraded), and treats a sequence number going
// back to 0 as an engine restart, which empties the engine's cache and so the
// holder's index slot.
//
// # Atomicity
//
// A batch is validated completely before anything changes: a malformed batch
// is dropped whole (ErrInvalid) and leaves the index as it was. Conditions
// that depend on state (an unknown parent, a chain as long as the holder's
// bound, a sliding-window group) skip the one event and are counted; the
// rest of the batch applies.
// The index writes of a batch go to the index in one Apply call.
//
// # Liveness
//
// The Registry (registry.go) is a pure decision core in the style of etcd
// raft's RawNode: no goroutines and no clock inside. It is told about
// batches and health checks with their times, and its Tick(now) names the
// pods to kill because both went silent for Config.DeadAfter. Killing a pod
// kills its index slots (the index sweeps them in the background) and frees
// its engine block forests.
//
// The cell's pod set (configured pods, and those its discovery finds) is
// told to the Registry with Manage (managed.go): a managed pod has an
// address and a role and is never forgotten by Tick. When the set drops a
// pod, the cell stops its subscription, kills its holders (Applier.Kill)
// and then Forgets it.
//
// # Counters
//
// Counters (counters.go) are plain atomic counters, exported by the daemon;
// this package imports no metrics library.
package events
