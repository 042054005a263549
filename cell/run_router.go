package cell

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/cell/flowcontrol"
	"github.com/cellrouter/cellrouter/cell/index"
	"github.com/cellrouter/cellrouter/cell/load"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/cell/podset"
)

// router is the cell's decision layer: the workflow built from the
// configured profiles, the candidate list, load tracking and sessions.
type router struct {
	cfg      RoutingConfig
	view     *podset.Set // the live pod set: routability, KV sizes
	ix       *index.Index
	reg      *events.Registry
	learned  *learnedPods
	state    *stateServer
	hasher   blockhash.Hasher
	workflow *pipeline.Workflow
	tracker  *load.Tracker
	// prefills are the prompts sent to pods and not yet prefilled, for the
	// prefix wait (routing.prefix_wait).
	prefills *load.Prefills
	// prefixWaiting counts the requests waiting for a prefill now.
	prefixWaiting atomic.Int64
	sessions      *plugins.Sessions
	obs           pipeline.Observer

	mu        sync.Mutex
	cands     []pipeline.Candidate // static part, refreshed every CandidatesTTL and with each pod set version
	candsVer  uint64               // the pod set version cands were built from
	candsAt   map[string]int       // pod -> index of its first entry in cands; a pod's holders are adjacent
	candsTime time.Time

	ctxPool sync.Pool // *scratch
	seed    uint64
}

func newRouter(cfg Config, ix *index.Index, reg *events.Registry, learned *learnedPods, state *stateServer, tok plugins.Tokenizer, obs pipeline.Observer, engines *engineScraper) (*router, error) {
	hasher, err := blockhash.NewHasher(cfg.Events.BlockSize)
	if err != nil {
		return nil, err
	}
	rt := &router{
		cfg: cfg.Routing, view: podset.New(cfg.staticPods()), ix: ix, reg: reg, learned: learned, state: state, hasher: hasher,
		tracker:  load.NewTracker(),
		prefills: load.NewPrefills(),
		sessions: plugins.NewSessions(cfg.Routing.SessionTTL, 1<<16, nil),
		obs:      obs,
	}
	reg2 := pipeline.NewRegistry()
	plugins.Register(reg2, plugins.Deps{Index: ix, Hasher: hasher, Tokenizer: tok, Sessions: rt.sessions, Engines: engines})
	// The default profile counts speculative blocks at speculative.weight.
	specWeight := cfg.Speculative.Weight
	profiles := map[string]pipeline.ProfileConfig{}
	for _, p := range cfg.Routing.Profiles {
		if _, dup := profiles[p.Name]; dup {
			return nil, fmt.Errorf("%w: routing.profiles: %q defined twice", ErrConfig, p.Name)
		}
		profiles[p.Name] = p
	}
	if _, ok := profiles["default"]; !ok {
		profiles["default"] = plugins.WithPressureWeight(plugins.WithSpeculativeWeight(
			plugins.DefaultProfile("default", cfg.Routing.KVOverlapScoreWeight, cfg.Routing.RouterTemperature, cfg.Routing.BusyThreshold), specWeight),
			cfg.Routing.KVPressureWeight)
		if cfg.EngineMetrics.Enabled {
			// The engine load plug-ins fall back per pod when its scrape is
			// stale, so they are safe on whenever scraping is.
			profiles["default"] = plugins.WithEngineLoad(profiles["default"], cfg.EngineMetrics.LoRAAffinityWeight)
		}
		if cfg.Routing.Cost.Model == CostTTFT {
			p, err := plugins.WithTTFTCost(profiles["default"], cfg.Routing.Cost.ttft(specWeight), cfg.Events.BlockSize)
			if err != nil {
				return nil, fmt.Errorf("%w: routing.cost: %v", ErrConfig, err)
			}
			profiles["default"] = p
		}
	}
	// Build every profile, used or not: a broken profile stops the daemon.
	built := map[string]*pipeline.Profile{}
	for name, pc := range profiles {
		p, err := reg2.Build(pc)
		if err != nil {
			return nil, err
		}
		built[name] = p
	}
	sel := func(name string) (*pipeline.Selector, error) {
		p, ok := built[name]
		if !ok {
			return nil, fmt.Errorf("%w: routing: no profile named %q", ErrConfig, name)
		}
		return pipeline.NewSelector(p, obs), nil
	}
	if cfg.Routing.PrefillProfile != "" {
		pre, err := sel(cfg.Routing.PrefillProfile)
		if err != nil {
			return nil, err
		}
		dec, err := sel(cfg.Routing.DecodeProfile)
		if err != nil {
			return nil, err
		}
		if rt.workflow, err = pipeline.NewDisaggregatedWorkflow(pre, dec); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrConfig, err)
		}
	} else {
		s, err := sel(cfg.Routing.Profile)
		if err != nil {
			return nil, err
		}
		rt.workflow = pipeline.NewSingleWorkflow(s)
	}
	rt.seed = uint64(time.Now().UnixNano())
	return rt, nil
}

func role(r events.Role) pipeline.Role {
	switch r {
	case events.RolePrefill:
		return pipeline.RolePrefill
	case events.RoleDecode:
		return pipeline.RoleDecode
	}
	return pipeline.RoleBoth
}

// podConfig returns a pod of the live pod set as a configured pod (the
// zero PodConfig for a pod the set does not hold).
func (rt *router) podConfig(id string) PodConfig {
	if p, ok := rt.view.Load().Get(id); ok {
		return configOf(p)
	}
	return PodConfig{}
}

// candidates returns the cell's routing targets with fresh loads, in dst's
// storage when it is large enough. Pods are the routable pods of the live
// pod set (podset): the registry's pods with an address that the set holds
// and that take new requests (a pod known only from its events cannot be
// sent requests; a pod not Ready, or terminating, is kept out at once: a
// new pod set version rebuilds the list). Each index holder of a pod is a
// target.
func (rt *router) candidates(dst []pipeline.Candidate) []pipeline.Candidate {
	rt.mu.Lock()
	view := rt.view.Load()
	if time.Since(rt.candsTime) > rt.cfg.CandidatesTTL || rt.cands == nil || rt.candsVer != view.Version {
		// A new map, not a cleared one: callers read the old one unlocked.
		rt.cands = rt.cands[:0]
		rt.candsAt = map[string]int{}
		rt.candsVer = view.Version
		for _, p := range rt.reg.Snapshot() {
			vp, held := view.Get(p.ID)
			if p.Address == "" || !held || !vp.Routable {
				continue
			}
			rt.candsAt[p.ID] = len(rt.cands)
			c := pipeline.Candidate{Target: &pipeline.Target{Pod: p.ID, Holder: p.ID, Address: vp.Address}, Role: role(events.Role(vp.Role)),
				Healthy: p.State != events.StateDead, Draining: rt.state.Draining(p.ID), TotalBlocks: vp.KVBlocks}
			if len(p.Holders) == 0 {
				// No events yet (or none ever): a slot of the cell's own
				// carries what routing learns about the pod.
				if rt.learned != nil {
					c.Slot, c.HasSlot = rt.learned.slot(p)
				}
				rt.cands = append(rt.cands, c)
				continue
			}
			for _, h := range p.Holders {
				c.Target = &pipeline.Target{Pod: p.ID, Holder: h.ID, Address: vp.Address}
				c.Slot, c.HasSlot = h.Slot, true
				rt.cands = append(rt.cands, c)
			}
		}
		rt.candsTime = time.Now()
	}
	out := append(dst[:0], rt.cands...)
	at := rt.candsAt
	rt.mu.Unlock()
	// How full each pod's cache is: one atomic load per holder.
	for i := range out {
		if out[i].HasSlot && out[i].TotalBlocks > 0 {
			out[i].HeldBlocks = rt.ix.Held(out[i].Slot)
		}
	}
	rt.tracker.Snapshot(func(pod string, u *load.Usage) {
		first, ok := at[pod]
		if !ok {
			return
		}
		for i := first; i < len(out) && out[i].Pod == pod; i++ {
			out[i].ActiveRequests, out[i].ActiveBlocks, out[i].PrefillBlocks = u.Requests, u.Blocks, u.PrefillBlocks
			if len(u.Templates) > 0 {
				out[i].RouteTemplates = make(map[string]int, len(u.Templates))
				for k, v := range u.Templates {
					out[i].RouteTemplates[k] = v
				}
			}
		}
	})
	return out
}

// invalidate drops the candidate cache (after a drain or a pod change).
func (rt *router) invalidate() {
	rt.mu.Lock()
	rt.candsTime = time.Time{}
	rt.mu.Unlock()
}

// decision is a plan with the context it was made in; release returns the
// context to the pool.
type decision struct {
	plan pipeline.Plan
	rc   *pipeline.Context
	took time.Duration
	sc   *scratch
	// grant is the request's hold on flow control (nil outside the data
	// plane); served is the tokens its pod reported serving, -1 unknown.
	grant  *flowcontrol.Grant
	served int
}

// scratch is what one decision reuses from the last: the routing context
// and the candidate list (256 candidates are 14 KB, which a fresh slice
// per request would allocate and the GC would scan).
type scratch struct {
	rc    *pipeline.Context
	cands []pipeline.Candidate
}

func (rt *router) release(d *decision) {
	if d.sc != nil {
		d.sc.rc.Reset(nil, nil)
		rt.ctxPool.Put(d.sc)
		d.sc, d.rc = nil, nil
	}
}

// decide plans req. It changes no state: the executor records the load of
// what it actually sends.
func (rt *router) decide(ctx context.Context, req *pipeline.Request) (*decision, error) {
	return rt.decideIn(ctx, req, nil, false)
}

// decideExplained is decide, recording what each stage saw and decided in
// the context when explain is set (pipeline.Context.SetExplain; read it
// with explainDecision before release).
func (rt *router) decideExplained(ctx context.Context, req *pipeline.Request, explain bool) (*decision, error) {
	return rt.decideIn(ctx, req, nil, explain)
}

// decideIn plans req among the candidates whose address allow accepts (all
// when allow is nil): a gateway's subset hint. None accepted is
// pipeline.ErrNoCandidate. explain is as for decideExplained.
func (rt *router) decideIn(ctx context.Context, req *pipeline.Request, allow func(addr string) bool, explain bool) (*decision, error) {
	start := time.Now()
	sc, _ := rt.ctxPool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{rc: pipeline.NewContext(req, nil, nil)}
	}
	sc.cands = rt.candidates(sc.cands)
	if allow != nil {
		kept := sc.cands[:0]
		for _, c := range sc.cands {
			if allow(c.Address) {
				kept = append(kept, c)
			}
		}
		sc.cands = kept
		if len(kept) == 0 {
			rt.ctxPool.Put(sc)
			return nil, pipeline.ErrNoCandidate
		}
	}
	rc := sc.rc
	rc.Reset(req, sc.cands)
	if explain {
		rc.SetExplain(true)
	}
	rc.Rand = rand.New(rand.NewPCG(rt.seed, uint64(start.UnixNano())))
	plan, err := rt.workflow.Plan(ctx, rc)
	d := &decision{plan: plan, rc: rc, took: time.Since(start), sc: sc, served: -1}
	if err != nil {
		rt.release(d)
		return nil, err
	}
	return d, nil
}
