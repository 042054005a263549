package cell

import (
	"log/slog"
	"sync"

	"github.com/cellrouter/cellrouter/cell/events"
)

// maxWarned bounds the (pod, reason) pairs the cell remembers having warned
// about, against publishers inventing pod names.
const maxWarned = 4096

// unindexedWarner logs one clear warning per pod and reason when a pod's
// events arrive but its blocks cannot be indexed, with what to change. The
// metrics count every drop; the log says once, in words, why a pod's cache
// is invisible to routing. It is safe for concurrent use.
type unindexedWarner struct {
	log *slog.Logger

	mu     sync.Mutex
	warned map[warnKey]bool
	full   bool
}

type warnKey struct {
	pod    string
	reason string
}

func newUnindexedWarner(log *slog.Logger) *unindexedWarner {
	return &unindexedWarner{log: log, warned: make(map[warnKey]bool)}
}

// first reports whether pod and reason have not been warned about yet, and
// records them.
func (w *unindexedWarner) first(pod, reason string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := warnKey{pod, reason}
	if w.warned[k] {
		return false
	}
	if len(w.warned) >= maxWarned {
		if !w.full {
			w.full = true
			w.log.Warn("cell: too many pods with unindexable events; further warnings suppressed (see cellrouter_events_*dropped_total)")
		}
		return false
	}
	w.warned[k] = true
	return true
}

// dropHints say what an operator can do about each drop reason.
var dropHints = map[events.DropReason]string{
	events.ReasonUnknownModel:  "the model is not in events.models: set the pod's model (pods[].model) or events.default_model to the model clients send, or add it to events.models",
	events.ReasonInvalid:       "the engine's events are malformed (for example token_ids that are not blocks times block_size): check the engine version and its kv-events settings",
	events.ReasonExtraKeys:     "blocks carry extra cache keys that requests cannot reproduce (multimodal inputs, prompt embeddings): those blocks and their descendants are not indexed; text blocks, LoRA adapters and cache salts are",
	events.ReasonNoTokens:      "the engine sends BlockStored without token_ids, so the router cannot compute its block hashes: enable token ids in the engine's KV events",
	events.ReasonSlidingWindow: "blocks of a sliding-window KV cache group are not prefix-reusable and are not indexed; the full-attention group is",
	events.ReasonHolderFull:    "one chain of this pod is as long as its bound (pods[].max_index_blocks, twice kv_blocks, events.max_index_blocks_per_pod or events.max_blocks_per_pod): its blocks past the bound are not indexed; raise the bound if the engine really caches that much, else the publisher is flooding",
	events.ReasonUnknownPod:    "the publisher names a pod that is not configured (neither a pods[].id nor a pods[].address): list the pod under pods, or name it as configured; events.accept_unknown_pods lets publishers register pods",
	events.ReasonUnknownParent: "the cell joined this pod's event stream mid-way (the cell, its transport or the publisher restarted, or messages were lost): " +
		"blocks whose parent the cell never saw are not indexed; new prompts index normally, and a replay endpoint (pods[].replay_endpoint) or a snapshot avoids the gap",
}

// onDrop is the applier's events.Config.OnDrop.
func (w *unindexedWarner) onDrop(d events.Drop) {
	if !w.first(d.Pod, d.Reason.String()) {
		return
	}
	w.log.Warn("cell: events of a pod arrive but blocks are not indexed",
		"pod", d.Pod, "holder", d.Holder, "reason", d.Reason.String(), "detail", d.Detail, "hint", dropHints[d.Reason])
}

// checkUnroutable warns once per pod that publishes events but is not in
// the configuration: with no address it is never sent requests, so its
// cache is indexed for nothing. Usually the engine names itself (in its
// topic, or as a publisher) differently from the pod's configured id and
// address.
func (w *unindexedWarner) checkUnroutable(reg *events.Registry) {
	for _, p := range reg.Snapshot() {
		if p.Static || p.Address != "" || p.Batches == 0 || !w.first(p.ID, "unroutable") {
			continue
		}
		w.log.Warn("cell: events from a pod that is not configured: it has no address and is never routed to",
			"pod", p.ID, "hint", "list it under pods with its address, or name it as the engine does: a configured pod's id or address, "+
				"or dial the engine (pods[].zmq_endpoint) so its events belong to that pod whatever its topic")
	}
}
