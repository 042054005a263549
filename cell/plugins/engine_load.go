package plugins

import (
	"context"

	"github.com/cellrouter/cellrouter/cell/enginemetrics"
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// EngineSource is where the engine-load preparer reads the engines' own
// metrics (the cell's scraper). View must be safe for concurrent use and
// must not block.
type EngineSource interface {
	View() enginemetrics.View
}

// EngineLoad is the engines' metrics at the start of the decision, by pod
// (package enginemetrics); a pod with no fresh snapshot falls back to the
// router's own estimate in every plug-in that reads it.
var EngineLoad = pipeline.NewSlot[enginemetrics.View]("engine-load")

// EngineLoadPrep writes EngineLoad: one atomic read of the scraper's newest
// view. Without a source (engine_metrics disabled) it writes the empty
// view, where every pod falls back.
type EngineLoadPrep struct{ src EngineSource }

var _ pipeline.Preparer = (*EngineLoadPrep)(nil)

func (*EngineLoadPrep) Type() string               { return "engine-load" }
func (*EngineLoadPrep) Reads() []pipeline.SlotRef  { return noSlots }
func (*EngineLoadPrep) Writes() []pipeline.SlotRef { return pipeline.Refs(EngineLoad.Ref()) }

// Prepare implements pipeline.Preparer.
func (p *EngineLoadPrep) Prepare(_ context.Context, rc *pipeline.Context) error {
	if _, done := EngineLoad.Get(rc); done {
		return nil
	}
	var v enginemetrics.View
	if p.src != nil {
		v = p.src.View()
	}
	EngineLoad.Set(rc, v)
	return nil
}

// EngineActiveBlocks corrects the decode-load term of kv-cost with the
// engine's own count, for traffic the router did not route (sent around
// it, or by another router). With kv-cost at weight 1 and this scorer at
// weight 1, a pod's cost becomes
//
//	overlap_weight * prefill_blocks + active_blocks + unseen_blocks
//	unseen_blocks = max(0, engine_blocks - router_blocks_at_scrape)
//
// where engine_blocks is the engine's KV usage times its capacity, scaled
// by (running + waiting) / running (enginemetrics.Sample.LoadBlocks), and
// router_blocks_at_scrape the router's own count when the scrape was
// answered (enginemetrics.Snapshot.RouterBlocks): their difference is the
// load only the engine saw, independent of the scrape's lag (see the
// enginemetrics doc). The capacity is the pod's kv_blocks, else the
// engine's cache_config_info in router blocks. An engine that reports its
// queue but no usage (or no capacity) is counted in requests instead:
// (running + waiting - the router's requests at the scrape) at the
// router's mean blocks per request on that pod. A pod without a fresh
// snapshot scores 0: the router's own estimate stands. Like kv-cost the
// score is raw (minus blocks), not normalised.
type EngineActiveBlocks struct{ blockSize int }

var _ pipeline.Scorer = (*EngineActiveBlocks)(nil)

func (*EngineActiveBlocks) Type() string               { return "engine-active-blocks" }
func (*EngineActiveBlocks) Reads() []pipeline.SlotRef  { return pipeline.Refs(EngineLoad.Ref()) }
func (*EngineActiveBlocks) Writes() []pipeline.SlotRef { return noSlots }

// Score implements pipeline.Scorer.
func (s *EngineActiveBlocks) Score(rc *pipeline.Context, out []float64) {
	v, _ := EngineLoad.Get(rc)
	for k, i := range rc.Active() {
		if unseen := unseenBlocks(v, &rc.Candidates[i], s.blockSize); unseen > 0 {
			out[k] = -unseen
		}
	}
}

// unseenBlocks is the load of c the engine reports and the router did not
// route (0 without a fresh snapshot that says enough).
func unseenBlocks(v enginemetrics.View, c *pipeline.Candidate, blockSize int) float64 {
	snap, fresh := v.Load(c.Pod)
	if !fresh {
		return 0
	}
	if eng, ok := snap.LoadBlocks(capacityBlocks(c, snap, blockSize)); ok {
		return max(0, eng-float64(snap.RouterBlocks))
	}
	if !snap.HasQueue {
		return 0
	}
	var perRequest float64
	switch {
	case c.ActiveRequests > 0:
		perRequest = float64(c.ActiveBlocks) / float64(c.ActiveRequests)
	case snap.RouterRequests > 0:
		perRequest = float64(snap.RouterBlocks) / float64(snap.RouterRequests)
	}
	return max(0, snap.Running+snap.Waiting-float64(snap.RouterRequests)) * perRequest
}

// capacityBlocks is a pod's KV cache size in router blocks: its configured
// kv_blocks, else what the engine says (tokens / block size), else 0.
func capacityBlocks(c *pipeline.Candidate, snap *enginemetrics.Snapshot, blockSize int) float64 {
	if c.TotalBlocks > 0 {
		return float64(c.TotalBlocks)
	}
	if snap != nil && blockSize > 0 {
		return float64(snap.CapacityTokens / int64(blockSize))
	}
	return 0
}
