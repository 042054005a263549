package plugins

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// Register adds every in-tree plug-in's factory to r. It is the one place
// that lists what a cell can load; a new plug-in adds a line here.
func Register(r *pipeline.Registry, d Deps) {
	simple := func(p pipeline.Plugin) pipeline.Factory {
		return func(pipeline.Params) (pipeline.Plugin, error) { return p, nil }
	}
	// Preparers.
	r.Register("tokens", simple(&Tokens{tok: d.Tokenizer}))
	r.Register("block-hashes", simple(&BlockHashes{h: d.Hasher}))
	r.Register("prefix-match", simple(&PrefixMatch{ix: d.Index}))
	r.Register("session", func(p pipeline.Params) (pipeline.Plugin, error) {
		s := &SessionKey{Header: "X-Session-Id"}
		if err := p.Decode(s); err != nil {
			return nil, err
		}
		if s.Header == "" {
			return nil, fmt.Errorf("header must not be empty")
		}
		return s, nil
	})
	r.Register("engine-load", simple(&EngineLoadPrep{src: d.Engines}))
	r.Register("hash-key", func(p pipeline.Params) (pipeline.Plugin, error) {
		h := &HashKey{Blocks: 4}
		if err := p.Decode(h); err != nil {
			return nil, err
		}
		if h.Blocks < 1 {
			return nil, fmt.Errorf("blocks = %d, want >= 1", h.Blocks)
		}
		return h, nil
	})
	// Filters.
	r.Register("healthy", simple(Healthy{}))
	r.Register("role", simple(RoleFilter{}))
	r.Register("concurrency", func(p pipeline.Params) (pipeline.Plugin, error) {
		f := &Concurrency{MaxRequests: 256}
		if err := p.Decode(f); err != nil {
			return nil, err
		}
		if f.MaxRequests < 1 {
			return nil, fmt.Errorf("max_requests = %d, want >= 1", f.MaxRequests)
		}
		return f, nil
	})
	r.Register("busy", func(p pipeline.Params) (pipeline.Plugin, error) {
		f := &Busy{Threshold: 0.95}
		if err := p.Decode(f); err != nil {
			return nil, err
		}
		if f.Threshold <= 0 || f.Threshold > 1 {
			return nil, fmt.Errorf("threshold = %v, want in (0, 1]", f.Threshold)
		}
		return f, nil
	})
	// Scorers.
	r.Register("kv-cost", func(p pipeline.Params) (pipeline.Plugin, error) {
		s := &KVCost{OverlapWeight: 1, SpeculativeWeight: 1, PressureWeight: DefaultPressureWeight}
		if err := p.Decode(s); err != nil {
			return nil, err
		}
		if s.OverlapWeight < 0 {
			return nil, fmt.Errorf("overlap_weight = %v, want >= 0", s.OverlapWeight)
		}
		if !(s.PressureWeight >= 0) {
			return nil, fmt.Errorf("pressure_weight = %v, want >= 0", s.PressureWeight)
		}
		if !(s.SpeculativeWeight >= 0 && s.SpeculativeWeight <= 1) {
			return nil, fmt.Errorf("speculative_weight = %v, want in [0, 1]", s.SpeculativeWeight)
		}
		s.split, _ = d.Index.(Splitter)
		return s, nil
	})
	r.Register("ttft-cost", func(p pipeline.Params) (pipeline.Plugin, error) {
		s := DefaultTTFTCost()
		if err := p.Decode(&s); err != nil {
			return nil, err
		}
		if err := s.validate(); err != nil {
			return nil, err
		}
		s.blockSize = d.Hasher.BlockSize
		s.split, _ = d.Index.(Splitter)
		return &s, nil
	})
	r.Register("cache-affinity", simple(CacheAffinity{}))
	r.Register("least-load", func(p pipeline.Params) (pipeline.Plugin, error) {
		s := &LeastLoad{}
		return s, p.Decode(s)
	})
	r.Register("round-robin", func(pipeline.Params) (pipeline.Plugin, error) { return &RoundRobin{}, nil })
	r.Register("session-affinity", simple(&SessionAffinity{s: d.Sessions}))
	r.Register("locality", simple(Locality{}))
	r.Register("route-template", simple(RouteTemplate{}))
	r.Register("engine-active-blocks", simple(&EngineActiveBlocks{blockSize: d.Hasher.BlockSize}))
	r.Register("kv-usage", simple(&KVUsage{blockSize: d.Hasher.BlockSize}))
	r.Register("queue-depth", func(p pipeline.Params) (pipeline.Plugin, error) {
		s := &QueueDepth{}
		return s, p.Decode(s)
	})
	r.Register("lora-affinity", simple(LoRAAffinity{}))
	// Pickers.
	r.Register("max-score", simple(MaxScore{}))
	r.Register("softmax", func(p pipeline.Params) (pipeline.Plugin, error) {
		s := &Softmax{}
		if err := p.Decode(s); err != nil {
			return nil, err
		}
		if s.Temperature < 0 {
			return nil, fmt.Errorf("temperature = %v, want >= 0", s.Temperature)
		}
		return s, nil
	})
	r.Register("round-robin-pick", func(pipeline.Params) (pipeline.Plugin, error) { return &RoundRobinPick{}, nil })
	r.Register("sticky-session", simple(&Sticky{s: d.Sessions}))
	r.Register("consistent-hash", func(p pipeline.Params) (pipeline.Plugin, error) {
		c := &ConsistentHash{Epsilon: 0.25}
		if err := p.Decode(c); err != nil {
			return nil, err
		}
		if c.Epsilon < 0 {
			return nil, fmt.Errorf("epsilon = %v, want >= 0", c.Epsilon)
		}
		return c, nil
	})
}

// WithSpeculativeWeight returns p with every kv-cost scorer counting
// speculative blocks at weight w (see KVCost); w = 1 returns p unchanged.
func WithSpeculativeWeight(p pipeline.ProfileConfig, w float64) pipeline.ProfileConfig {
	if w == 1 {
		return p
	}
	return withKVCost(p, func(kc *KVCost) { kc.SpeculativeWeight = w })
}

// WithPressureWeight returns p with every kv-cost scorer weighing cache
// pressure at w (see KVCost.PressureWeight).
func WithPressureWeight(p pipeline.ProfileConfig, w float64) pipeline.ProfileConfig {
	return withKVCost(p, func(kc *KVCost) { kc.PressureWeight = w })
}

// withKVCost returns p with set applied to the parameters of every kv-cost
// scorer (decoded over the factory's defaults); p's own slices are not
// changed. A scorer whose parameters do not decode is left for Build to
// report.
func withKVCost(p pipeline.ProfileConfig, set func(*KVCost)) pipeline.ProfileConfig {
	score := make([]pipeline.PluginSpec, len(p.Score))
	copy(score, p.Score)
	for i := range score {
		if score[i].Type != "kv-cost" {
			continue
		}
		kc := KVCost{OverlapWeight: 1, SpeculativeWeight: 1, PressureWeight: DefaultPressureWeight}
		if err := score[i].Params.Decode(&kc); err != nil {
			continue // Build reports it
		}
		set(&kc)
		params, err := pipeline.ParamsOf(fmt.Sprintf("{overlap_weight: %v, speculative_weight: %v, pressure_weight: %v}",
			kc.OverlapWeight, kc.SpeculativeWeight, kc.PressureWeight))
		if err == nil {
			score[i].Params = params
		}
	}
	p.Score = score
	return p
}

// WithEngineLoad returns p with the engine load plug-ins added, as the
// default profile has them when engine_metrics is enabled: the
// engine-load preparer, engine-active-blocks at weight 1 (so that the
// decode term of kv-cost becomes max(router's, engine's active blocks))
// and lora-affinity at loraWeight (in KV blocks; 0 leaves it out). A
// profile that has an engine-load preparer already is returned unchanged.
func WithEngineLoad(p pipeline.ProfileConfig, loraWeight float64) pipeline.ProfileConfig {
	for _, s := range p.Prepare {
		if s.Type == "engine-load" {
			return p
		}
	}
	p.Prepare = append(append([]pipeline.PluginSpec(nil), p.Prepare...), pipeline.PluginSpec{Type: "engine-load"})
	p.Score = append(append([]pipeline.PluginSpec(nil), p.Score...), pipeline.PluginSpec{Type: "engine-active-blocks", Weight: 1})
	if loraWeight > 0 {
		p.Score = append(p.Score, pipeline.PluginSpec{Type: "lora-affinity", Weight: loraWeight})
	}
	return p
}

// DefaultProfile is the reference KV router's decision as a profile:
// token ids, block hashes and the index's prefix match; healthy pods of the
// right role that are not busy; cost = overlapWeight * prefill_blocks +
// decode_blocks; softmax over normalised costs at temperature (0: lowest
// cost wins).
func DefaultProfile(name string, overlapWeight, temperature, busyThreshold float64) pipeline.ProfileConfig {
	params := func(s string) pipeline.Params {
		p, err := pipeline.ParamsOf(s)
		if err != nil {
			panic(err) // constant text
		}
		return p
	}
	return pipeline.ProfileConfig{
		Name:    name,
		Prepare: []pipeline.PluginSpec{{Type: "tokens"}, {Type: "block-hashes"}, {Type: "prefix-match"}},
		Filter: []pipeline.PluginSpec{{Type: "healthy"}, {Type: "role"},
			{Type: "busy", Params: params(fmt.Sprintf("threshold: %v", busyThreshold))}},
		Score: []pipeline.PluginSpec{{Type: "kv-cost", Weight: 1, Params: params(fmt.Sprintf("overlap_weight: %v", overlapWeight))}},
		Pick:  pipeline.PluginSpec{Type: "softmax", Params: params(fmt.Sprintf("temperature: %v", temperature))},
	}
}
