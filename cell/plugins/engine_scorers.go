package plugins

import (
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// KVUsage scores pods by how much of their KV cache is free, in [0, 1]:
// 1 - the engine's kv_cache_usage (vLLM kv_cache_usage_perc, SGLang
// token_usage). A pod without a fresh snapshot falls back to the router's
// estimate, active blocks over capacity, or 0.5 when its capacity is
// unknown too.
type KVUsage struct{ blockSize int }

var _ pipeline.Scorer = (*KVUsage)(nil)

func (*KVUsage) Type() string               { return "kv-usage" }
func (*KVUsage) Reads() []pipeline.SlotRef  { return pipeline.Refs(EngineLoad.Ref()) }
func (*KVUsage) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *KVUsage) Score(rc *pipeline.Context, out []float64) {
	v, _ := EngineLoad.Get(rc)
	for k, i := range rc.Active() {
		c := &rc.Candidates[i]
		snap, fresh := v.Load(c.Pod)
		switch {
		case fresh && snap.HasKVUsage:
			out[k] = 1 - snap.KVUsage
		default:
			if capa := capacityBlocks(c, snap, s.blockSize); capa > 0 {
				out[k] = 1 - min(float64(c.ActiveBlocks)/capa, 1)
			} else {
				out[k] = 0.5
			}
		}
	}
}

// QueueDepth scores pods by how few requests they hold, normalised to
// [0, 1] over the active pods: the router's requests in flight there plus
// those the engine holds that the router did not send (running + waiting
// minus the router's count at the scrape, as engine-active-blocks counts
// blocks). A pod without a fresh snapshot counts the router's number
// alone. With WaitingOnly, only queued requests count (the engine's
// waiting; the router's in-flight requests when stale).
type QueueDepth struct {
	WaitingOnly bool `yaml:"waiting_only"`
}

var _ pipeline.Scorer = (*QueueDepth)(nil)

func (*QueueDepth) Type() string               { return "queue-depth" }
func (*QueueDepth) Reads() []pipeline.SlotRef  { return pipeline.Refs(EngineLoad.Ref()) }
func (*QueueDepth) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *QueueDepth) Score(rc *pipeline.Context, out []float64) {
	v, _ := EngineLoad.Get(rc)
	for k, i := range rc.Active() {
		c := &rc.Candidates[i]
		n := float64(c.ActiveRequests)
		if snap, fresh := v.Load(c.Pod); fresh && snap.HasQueue {
			if s.WaitingOnly {
				n = snap.Waiting
			} else {
				n += max(0, snap.Running+snap.Waiting-float64(snap.RouterRequests))
			}
		}
		out[k] = -n
	}
	normalize(out)
}

// LoRAAffinity prefers pods that have the request's adapter loaded (the
// request names it as its model, or in its LoRA field), from vLLM's
// lora_requests_info: 1 when a running request uses it, 0.75 when a
// waiting one does (it is being loaded), 0.5 when the pod has a free
// adapter slot (fewer adapters than max_lora), 0 otherwise. When no pod
// has the adapter (a base-model request, an adapter nobody loaded), or a
// pod's snapshot is not fresh, it scores 0: no preference. Its weight is
// in the unit of the scorers beside it (KV blocks beside kv-cost).
type LoRAAffinity struct{}

var _ pipeline.Scorer = LoRAAffinity{}

func (LoRAAffinity) Type() string               { return "lora-affinity" }
func (LoRAAffinity) Reads() []pipeline.SlotRef  { return pipeline.Refs(EngineLoad.Ref()) }
func (LoRAAffinity) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (LoRAAffinity) Score(rc *pipeline.Context, out []float64) {
	v, _ := EngineLoad.Get(rc)
	adapter := rc.Req.LoRA
	if adapter == "" {
		adapter = rc.Req.Model
	}
	if adapter == "" || !v.AnyAdapter(adapter) {
		return
	}
	for k, i := range rc.Active() {
		snap, fresh := v.Load(rc.Candidates[i].Pod)
		if !fresh || !snap.HasLoRA {
			continue
		}
		switch snap.HasAdapter(adapter) {
		case 2:
			out[k] = 1
		case 1:
			out[k] = 0.75
		default:
			if snap.MaxLoRA > 0 && len(snap.RunningLoRA)+len(snap.WaitingLoRA) < snap.MaxLoRA {
				out[k] = 0.5
			}
		}
	}
}
