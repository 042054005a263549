package compare

import (
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// The routing modes, as their JSON keys.
const (
	ModeRandom     = "random"
	ModeRoundRobin = "round_robin"
	ModeKV         = "kv"
	// ModeKVNoSpec is kv with speculative entries off: the index knows
	// only what the engines' events said.
	ModeKVNoSpec = "kv-nospec"
	// ModeApprox is kv on a fleet that publishes no KV events: the cell's
	// approximate index, learned from its own routing.
	ModeApprox = "approx"
	// ModeKVEngine is kv with the engines' own load metrics
	// (engine_metrics and the engine load plug-ins); every other mode
	// routes without them. Not in ModeNames: the bypass comparison
	// (Config.Bypass) sets it against kv.
	ModeKVEngine = "kv-engine"
)

// ModeNames lists the modes in the order they run.
var ModeNames = []string{ModeRandom, ModeRoundRobin, ModeKVNoSpec, ModeKV, ModeApprox}

// mode is one routing mode: the cell profile it routes with and, when the
// cell does not add it itself, the profile's configuration.
type mode struct {
	// profile is the cell's Routing.Profile.
	profile string
	// config is added to Routing.Profiles; nil for the cell's own default.
	config *pipeline.ProfileConfig
	// about says what the mode does, for the report.
	about string
	// noEvents runs the fleet without KV events and the cell's pods as
	// events "none" (the approximate index).
	noEvents bool
	// noSpec turns the cell's speculative entries off.
	noSpec bool
	// engineMetrics turns the cell's engine_metrics on (the default
	// profile then takes the engine load plug-ins).
	engineMetrics bool
	// cacheAware marks the modes that route with the kv profile (the
	// kv-max-requests cap applies to them).
	cacheAware bool
}

// modes are the routing modes by name. Random and round-robin keep the
// healthy filter and nothing else, so they differ from the cache-aware
// default profile only in the decision: random is max-score over no
// scorers (every pod scores 0, and max-score breaks ties at random);
// round-robin takes the pods in turn. kv is the cell's default profile
// (cost = the expected time to first token from the engines' timing, or
// with Config.Cost "blocks" overlap weight x blocks to prefill + active
// blocks; lowest cost wins); kv-nospec and approx are the same
// profile with speculative entries off, and on a fleet without events.
var modes = map[string]mode{
	ModeRandom: {profile: "random", about: "random pod (max-score over equal scores, random tie-break)",
		config: &pipeline.ProfileConfig{Name: "random",
			Filter: []pipeline.PluginSpec{{Type: "healthy"}},
			Pick:   pipeline.PluginSpec{Type: "max-score"}}},
	ModeRoundRobin: {profile: "round-robin", about: "pods in turn (round-robin-pick)",
		config: &pipeline.ProfileConfig{Name: "round-robin",
			Filter: []pipeline.PluginSpec{{Type: "healthy"}},
			Pick:   pipeline.PluginSpec{Type: "round-robin-pick"}}},
	ModeKV: {profile: "default", cacheAware: true,
		about: "cache-aware: the default profile (prefix match on the block index fed by KV events, with speculative entries; cost from prefill and load)"},
	ModeKVNoSpec: {profile: "default", cacheAware: true, noSpec: true,
		about: "cache-aware without speculative entries: the index knows only what KV events said"},
	ModeApprox: {profile: "default", cacheAware: true, noEvents: true,
		about: "cache-aware on a fleet without KV events: the approximate index learned from the cell's own routing"},
	ModeKVEngine: {profile: "default", cacheAware: true, engineMetrics: true,
		about: "kv plus the engines' own load (engine_metrics: the decode term is max(router's, engine's active blocks), lora-affinity)"},
}
