package hierarchy

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/loadtest/engine"
)

// cluster is a set of pods behind one exact index and one selector of the
// cell's default profile: a cell of the hierarchical router, or the flat
// router's single pool of every pod. Each pod has its own engine cache
// model; every admission's stored and removed blocks are applied to the
// index as ops, so the index always equals the union of the caches.
type cluster struct {
	id     string
	ix     *index.Index
	sel    *pipeline.Selector
	rc     *pipeline.Context
	caches []*engine.Cache
	// cands are the selector's candidates, local pod i at position i; their
	// ActiveRequests and ActiveBlocks are the load model's current view.
	cands []pipeline.Candidate
	// global[i] is local pod i's fleet-wide number.
	global []int
	// held is the union of the caches with depths (nil when not tracked).
	held *heldSet
	// load sums the pods' load.
	activeReqs, activeBlocks int

	ops     []index.Op
	removed []blockhash.Hash
	evicted int64
}

// newCluster builds a cluster of the given fleet-wide pods, each with a
// cache of blocksPerPod blocks; tok tokenizes text prompts and chats (nil
// for token prompts). trackHeld keeps the held set a summary needs.
func newCluster(id string, pods []int, cfg Config, h blockhash.Hasher, tok plugins.Tokenizer, trackHeld bool) (*cluster, error) {
	ix, err := index.New(index.DefaultConfig())
	if err != nil {
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	r := pipeline.NewRegistry()
	plugins.Register(r, plugins.Deps{Index: ix, Hasher: h, Tokenizer: tok})
	prof, err := r.Build(plugins.WithPressureWeight(plugins.DefaultProfile("default", cfg.OverlapWeight, cfg.Temperature, cfg.BusyThreshold), cfg.PressureWeight))
	if err != nil {
		ix.Close()
		return nil, fmt.Errorf("hierarchy: cell %s: %w", id, err)
	}
	c := &cluster{id: id, ix: ix, sel: pipeline.NewSelector(prof, nil), global: pods}
	if trackHeld {
		c.held = newHeldSet()
	}
	for i, g := range pods {
		name := podName(g)
		slot, err := ix.Register(name)
		if err != nil {
			ix.Close()
			return nil, fmt.Errorf("hierarchy: cell %s: register %s: %w", id, name, err)
		}
		if int(slot) != i {
			ix.Close()
			return nil, fmt.Errorf("hierarchy: cell %s: pod %s got slot %d, want %d", id, name, slot, i)
		}
		c.caches = append(c.caches, engine.NewCache(cfg.BlocksPerPod))
		c.cands = append(c.cands, pipeline.Candidate{
			Target: &pipeline.Target{Pod: name, Holder: name, Address: name + ":8000"}, Slot: slot, HasSlot: true, Healthy: true,
			TotalBlocks: cfg.BlocksPerPod,
		})
	}
	return c, nil
}

// podName names fleet-wide pod g.
func podName(g int) string { return fmt.Sprintf("pod-%03d", g) }

// close stops the index's sweeper.
func (c *cluster) close() { c.ix.Close() }

// pick is a cluster's routing decision.
type pick struct {
	// local is the chosen pod's position in the cluster.
	local int
	// depth is the chosen pod's matched prefix in blocks, per the index.
	depth int
	// best is the deepest match of any pod in the cluster.
	best int
	// failedOpen says every pod was busy and the selector ignored its
	// soft filters (what a probe's answer reports as failed_open).
	failedOpen bool
	// evicts is how many cached blocks the chosen pod would evict to store
	// the blocks it lacks (what a probe's answer reports as evict_blocks).
	evicts float64
}

// decide runs the cell's selector for req over the current candidates, as
// CellService.Route and the data plane do, changing nothing.
func (c *cluster) decide(ctx context.Context, req *pipeline.Request, rng *rand.Rand) (pick, error) {
	if c.rc == nil {
		c.rc = pipeline.NewContext(req, c.cands, rng)
	} else {
		c.rc.Reset(req, c.cands)
		c.rc.Rand = rng
	}
	d, err := c.sel.Select(ctx, c.rc)
	if err != nil {
		return pick{}, fmt.Errorf("hierarchy: cell %s: %w", c.id, err)
	}
	p := pick{local: d.Pick(), failedOpen: d.FailedOpen}
	if m, ok := pipeline.Match.Get(c.rc); ok && m != nil {
		p.depth = m.Depth(c.cands[p.local].Slot)
		if _, b, ok := m.Best(); ok {
			p.best = b
		}
	}
	if hs, ok := pipeline.BlockHashes.Get(c.rc); ok {
		p.evicts = c.cands[p.local].Evicts(len(hs) - p.depth)
	}
	return p, nil
}

// admit serves chain on local pod i at time now: the engine model admits
// it, and its removed and stored blocks go to the index (and the held set)
// in that order, as the pod's KV events would. It returns the prefix hit.
func (c *cluster) admit(i int, now int64, chain []blockhash.Hash) int {
	ad := c.caches[i].Admit(now, chain, c.removed)
	c.removed = ad.Removed
	slot := c.cands[i].Slot
	ops := c.ops[:0]
	for _, h := range ad.Removed {
		ops = append(ops, index.Op{Kind: index.OpRemove, Slot: slot, Tier: index.TierGPU, Hash: h})
	}
	for _, h := range ad.Stored {
		ops = append(ops, index.Op{Kind: index.OpStore, Slot: slot, Tier: index.TierGPU, Hash: h})
	}
	if len(ops) > 0 {
		c.ix.Apply(ops)
	}
	c.ops = ops
	c.evicted += int64(len(ad.Removed))
	c.cands[i].HeldBlocks = c.ix.Held(slot)
	if c.held != nil {
		for _, h := range ad.Removed {
			c.held.remove(h)
		}
		for k, h := range ad.Stored {
			c.held.store(h, ad.Matched+k+1)
		}
	}
	return ad.Matched
}

// addLoad changes local pod i's load by reqs requests and blocks blocks.
func (c *cluster) addLoad(i, reqs, blocks int) {
	c.cands[i].ActiveRequests += reqs
	c.cands[i].ActiveBlocks += blocks
	c.activeReqs += reqs
	c.activeBlocks += blocks
}
