package compare

import (
	"github.com/cellrouter/cellrouter/cell/pipeline"
)

// The routing modes, as their JSON keys.
const (
	ModeRandom     = "random"
	ModeRoundRobin = "round_robin"
	ModeKV         = "kv"
)

// ModeNames lists the modes in the order they run.
var ModeNames = []string{ModeRandom, ModeRoundRobin, ModeKV}

// mode is one routing mode: the cell profile it routes with and, when the
// cell does not add it itself, the profile's configuration.
type mode struct {
	// profile is the cell's Routing.Profile.
	profile string
	// config is added to Routing.Profiles; nil for the cell's own default.
	config *pipeline.ProfileConfig
	// about says what the mode does, for the report.
	about string
}

// modes are the routing modes by name. Random and round-robin keep the
// healthy filter and nothing else, so they differ from the cache-aware
// default profile only in the decision: random is max-score over no
// scorers (every pod scores 0, and max-score breaks ties at random);
// round-robin takes the pods in turn. kv is the cell's default profile,
// the reference KV router (cost = overlap weight x blocks to prefill +
// active blocks, lowest cost wins).
var modes = map[string]mode{
	ModeRandom: {profile: "random", about: "random pod (max-score over equal scores, random tie-break)",
		config: &pipeline.ProfileConfig{Name: "random",
			Filter: []pipeline.PluginSpec{{Type: "healthy"}},
			Pick:   pipeline.PluginSpec{Type: "max-score"}}},
	ModeRoundRobin: {profile: "round-robin", about: "pods in turn (round-robin-pick)",
		config: &pipeline.ProfileConfig{Name: "round-robin",
			Filter: []pipeline.PluginSpec{{Type: "healthy"}},
			Pick:   pipeline.PluginSpec{Type: "round-robin-pick"}}},
	ModeKV: {profile: "default", about: "cache-aware: the default KV-cost profile (prefix match on the block index, plus load)"},
}
