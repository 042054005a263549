package hierarchy

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
)

// request is one trace request as both routers see it.
type request struct {
	// i is the request's position in the trace; it seeds the decision's
	// randomness, so that both routers draw the same tie-breaks.
	i int
	// now is the arrival in ns of trace time; end when its load ends.
	now, end int64
	// req is what the cells' selectors see at the hand-off (token ids, or
	// a text prompt or chat they tokenize); probe what a probe carries
	// (the global tier's token ids).
	req, probe *pipeline.Request
	// chain is the engine's chain of the prompt; search the global tier's
	// (equal unless the tiers tokenize differently).
	chain, search []blockhash.Hash
	// blocks is the load the request puts on its pod while it runs.
	blocks int
}

// decider holds the per-decision randomness: every selector pass of
// request i runs with a generator seeded (Seed, i), so the flat router and
// the cell that finally picks draw exactly the same tie-breaks.
type decider struct {
	seed uint64
	pcg  *rand.PCG
	rng  *rand.Rand
}

func newDecider(seed uint64) decider {
	pcg := rand.NewPCG(seed, 0)
	return decider{seed: seed, pcg: pcg, rng: rand.New(pcg)}
}

// reseed resets the generator for request i and returns it.
func (d *decider) reseed(i int) *rand.Rand {
	d.pcg.Seed(d.seed, uint64(i))
	return d.rng
}

// flatRouter is one selector over one exact index of every pod.
type flatRouter struct {
	cl     *cluster
	dec    decider
	load   loadModel
	served []int64
	out    outcomes
}

func newFlatRouter(cfg Config, h blockhash.Hasher, tok plugins.Tokenizer) (*flatRouter, error) {
	pods := make([]int, cfg.Pods())
	for i := range pods {
		pods[i] = i
	}
	cl, err := newCluster("flat", pods, cfg, h, tok, false)
	if err != nil {
		return nil, err
	}
	return &flatRouter{cl: cl, dec: newDecider(cfg.Seed), served: make([]int64, cfg.Pods()), out: newOutcomes(cfg)}, nil
}

// route decides, admits and starts the request's load; it returns the
// pod's prefix hit in blocks.
func (f *flatRouter) route(ctx context.Context, r *request) (int, error) {
	p, err := f.cl.decide(ctx, r.req, f.dec.reseed(r.i))
	if err != nil {
		return 0, err
	}
	f.out.observe(f.cl, p.local, r)
	matched := f.cl.admit(p.local, r.now, r.chain)
	f.out.served(len(r.chain) - matched)
	f.load.start(f.cl, p.local, r.blocks, r.end)
	f.served[f.cl.global[p.local]]++
	return matched, nil
}

// hierRouter is the global tier over cells: global.Search over the cells'
// latest summaries, probes (the cell's selector run in-process, which is
// what CellService.Route does), global.Choose, and the hand-off, where the
// chosen cell's selector decides again.
type hierRouter struct {
	cells  []*cluster
	sums   []*summarizer
	views  []global.CellView
	search global.SearchConfig
	choose global.ChooseConfig
	dec    decider
	load   loadModel
	served []int64
	// cap is the KV blocks of one cell, for its gossiped free blocks.
	cap int
	// podLoads is cellLoad's buffer.
	podLoads []int

	out     outcomes
	answers []global.ProbeAnswer
	// text checks the serving cell's chain in text modes (nil otherwise).
	text *texter

	// Counters.
	probeHist                  []int64 // requests by number of probes
	probes, falseProbes, colds int64
}

func newHierRouter(cfg Config, h blockhash.Hasher, tok plugins.Tokenizer) (*hierRouter, error) {
	search, choose := cfg.tier().configs()
	hr := &hierRouter{
		search: search, choose: choose,
		dec: newDecider(cfg.Seed), served: make([]int64, cfg.Pods()),
		cap:       cfg.PodsPerCell * cfg.BlocksPerPod,
		probeHist: make([]int64, cfg.MaxProbes+1),
		out:       newOutcomes(cfg),
	}
	for c := range cfg.Cells {
		pods := make([]int, cfg.PodsPerCell)
		for i := range pods {
			pods[i] = c*cfg.PodsPerCell + i
		}
		id := fmt.Sprintf("cell-%02d", c)
		cl, err := newCluster(id, pods, cfg, h, tok, true)
		if err != nil {
			hr.close()
			return nil, err
		}
		hr.cells = append(hr.cells, cl)
		s, err := newSummarizer(id, cfg.summaryConfig())
		if err != nil {
			hr.close()
			return nil, err
		}
		hr.sums = append(hr.sums, s)
		hr.views = append(hr.views, global.CellView{ID: id, HTTPAddr: id + ":8000", GRPCAddr: id + ":8001", Alive: true})
	}
	return hr, nil
}

func (h *hierRouter) close() {
	for _, c := range h.cells {
		c.close()
	}
}

// cellLoad is what cell c gossips as its load now.
func (h *hierRouter) cellLoad(c *cluster) global.CellLoad {
	h.podLoads = h.podLoads[:0]
	for i := range c.cands {
		h.podLoads = append(h.podLoads, c.cands[i].ActiveBlocks)
	}
	l := gossip.Load{ActiveRequests: c.activeReqs, ActiveBlocks: c.activeBlocks,
		FreeBlocks: max(0, h.cap-c.activeBlocks), Pods: len(c.cands)}
	l.SetLightest(h.podLoads)
	return global.CellLoad(l)
}

// announceLoad makes every cell announce its current load (a header
// without a new summary, counted in the gossip bytes); the global tier's
// views replace the load they held, with what their own hand-offs added to
// it since.
func (h *hierRouter) announceLoad() {
	for i, c := range h.cells {
		l := h.cellLoad(c)
		h.sums[i].heartbeat(l)
		h.views[i].Load = l
	}
}

// publish makes every cell publish a new summary generation with its
// current load; the global tier's views then hold it until the next one.
func (h *hierRouter) publish() error {
	for i, c := range h.cells {
		l := h.cellLoad(c)
		s, err := h.sums[i].publish(c.held, l)
		if err != nil {
			return err
		}
		v := &h.views[i]
		v.Summary, v.Load = s, l
		v.SummaryGen, v.SummaryBytes = h.sums[i].pub.Gen(), s.SizeBytes()
	}
	return nil
}

// route decides across cells, hands off, admits and starts the request's
// load; it returns the pod's prefix hit in blocks.
func (h *hierRouter) route(ctx context.Context, r *request) (int, error) {
	cands, cold := global.Search(h.search, h.views, r.search, 0)
	if len(cands) == 0 {
		return 0, fmt.Errorf("hierarchy: request %d: %w", r.i, global.ErrNoCell)
	}
	cell := cands[0].Cell
	n := 0
	if cold {
		h.colds++
	}
	if cold && !h.search.ProbesCold() {
		// Unprobed, to the less loaded of two hashed cells: the global
		// tier counts the load it hands the cell (global.Router's
		// noteRouted), not knowing the pod.
		h.views[cell].Load.Routed(r.blocks, -1)
	} else {
		h.answers = h.answers[:0]
		for _, c := range cands {
			cl := h.cells[c.Cell]
			p, err := cl.decide(ctx, r.probe, h.dec.reseed(r.i))
			a := global.ProbeAnswer{Cell: c.Cell, Err: err, CellBlocks: h.views[c.Cell].Load.ActiveBlocks}
			if err == nil {
				pc := &cl.cands[p.local]
				a.Pod, a.Matched, a.Load = pc.Pod, p.depth, float64(pc.ActiveBlocks)
				a.Busy = p.failedOpen
				a.Evicts = p.evicts
			}
			n++
			// A false probe is one the summary sent for nothing: it
			// estimated a prefix the cell does not hold. The probe Search
			// adds for the least loaded cell (estimate 0) is a load probe,
			// not a summary's promise, and cannot be false.
			if c.Estimated > 0 && (err != nil || p.best == 0 || p.best < c.Estimated) {
				h.falseProbes++
			}
			h.answers = append(h.answers, a)
		}
		cell = global.Choose(h.choose, h.answers, len(r.search))[0]
		for _, a := range h.answers {
			if a.Cell == cell && a.Err == nil {
				h.views[cell].Load.Routed(r.blocks, int(a.Load))
			}
		}
	}
	h.probes += int64(n)
	h.probeHist[n]++
	cl := h.cells[cell]
	p, err := cl.decide(ctx, r.req, h.dec.reseed(r.i))
	if err != nil {
		return 0, err
	}
	if h.text != nil {
		h.text.checkCell(cl.rc, r.chain)
	}
	h.out.observe(cl, p.local, r)
	matched := cl.admit(p.local, r.now, r.chain)
	h.out.served(len(r.chain) - matched)
	h.load.start(cl, p.local, r.blocks, r.end)
	h.served[cl.global[p.local]]++
	return matched, nil
}
