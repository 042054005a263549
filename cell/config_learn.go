package cell

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cell/index"
)

// Pod event modes (PodConfig.Events, ApproximateConfig.DefaultPodEvents).
const (
	// PodEventsExact: the pod publishes KV events and the index knows its
	// blocks from them (plus speculative entries).
	PodEventsExact = "exact"
	// PodEventsNone: the pod publishes no events; the cell learns its
	// blocks from its own routing (the approximate index). If the pod
	// publishes after all, it switches to exact at its first event.
	PodEventsNone = "none"
)

// ApproximateConfig configures the approximate index: what the cell learns
// about pods that publish no KV events from its own routing decisions. A
// request's blocks count as held by its pod from its first token until TTL
// passes without another request using them, within a bound per pod (least
// recently used first).
type ApproximateConfig struct {
	// DefaultPodEvents is the event mode of pods that do not set
	// pods[].events: exact (default) or none.
	DefaultPodEvents string `yaml:"default_pod_events"`
	// TTL is how long a learned block stays after its last use. Default
	// 120s.
	TTL time.Duration `yaml:"ttl"`
	// MaxBlocksPerPod bounds a pod's approximate blocks (what its engine
	// stored), and apart from them its speculative ones (prefills still
	// running, which no cache holds yet): 0 means the pod's kv_blocks (no
	// engine caches more), else 65536 when kv_blocks is 0. About 100
	// bytes each.
	MaxBlocksPerPod int `yaml:"max_blocks_per_pod"`
}

// SpeculativeConfig configures speculative entries: when a request is
// routed, its blocks count as held by the chosen pod until the engine's
// events confirm them or TTL passes, so that requests sharing a new prefix
// that arrive before the first event follow the first one.
type SpeculativeConfig struct {
	// TTL is how long a speculative entry lives without confirmation;
	// 0 turns speculative entries off. Default 2s.
	TTL time.Duration `yaml:"ttl"`
	// Weight is what a speculative block counts for in the default
	// profile's cost, against 1 for a block the events confirmed: in
	// [0, 1], default 1. Below 1 each decision also looks up where the
	// exact part of every matched pod's depth ends (a few microseconds).
	Weight float64 `yaml:"weight"`
}

// defaultApproximate and defaultSpeculative are the sections' defaults.
func defaultApproximate() ApproximateConfig {
	d := index.DefaultLearnConfig()
	return ApproximateConfig{DefaultPodEvents: PodEventsExact, TTL: d.ApproximateTTL}
}

func defaultSpeculative() SpeculativeConfig {
	return SpeculativeConfig{TTL: index.DefaultLearnConfig().SpeculativeTTL, Weight: 1}
}

// validateLearning checks the approximate and speculative sections and the
// pods' event modes.
func (c Config) validateLearning() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrConfig, field, v, why)
	}
	if m := c.Approximate.DefaultPodEvents; m != PodEventsExact && m != PodEventsNone {
		return bad("approximate.default_pod_events", fmt.Sprintf("%q", m), "want exact or none")
	}
	if c.Approximate.TTL <= 0 {
		return bad("approximate.ttl", c.Approximate.TTL, "must be positive")
	}
	if c.Approximate.MaxBlocksPerPod < 0 {
		return bad("approximate.max_blocks_per_pod", c.Approximate.MaxBlocksPerPod, "must not be negative")
	}
	if c.Speculative.TTL < 0 {
		return bad("speculative.ttl", c.Speculative.TTL, "must not be negative")
	}
	if w := c.Speculative.Weight; !(w >= 0 && w <= 1) {
		return bad("speculative.weight", w, "want [0, 1]")
	}
	for i, p := range c.Pods {
		if p.Events != "" && p.Events != PodEventsExact && p.Events != PodEventsNone {
			return bad(fmt.Sprintf("pods[%d].events", i), fmt.Sprintf("%q", p.Events), "want exact or none")
		}
	}
	return nil
}

// learnConfig is the index learner's configuration.
func (c Config) learnConfig() index.LearnConfig {
	l := index.DefaultLearnConfig()
	l.SpeculativeTTL = c.Speculative.TTL
	l.ApproximateTTL = c.Approximate.TTL
	if c.Approximate.MaxBlocksPerPod > 0 {
		l.MaxBlocksPerSlot = c.Approximate.MaxBlocksPerPod
	}
	return l
}

// podEvents returns pod p's event mode.
func (c Config) podEvents(p PodConfig) string {
	if p.Events != "" {
		return p.Events
	}
	return c.Approximate.DefaultPodEvents
}

// learnedBound is the bound of pod p's learned blocks (0: the learner's).
func (c Config) learnedBound(p PodConfig) int {
	if c.Approximate.MaxBlocksPerPod > 0 {
		return c.Approximate.MaxBlocksPerPod
	}
	return p.KVBlocks
}

// learnInterval is how often the cell expires learned blocks: a quarter of
// the shorter TTL, between 50ms and 1s, so that a block outlives its TTL
// by at most that.
func (c Config) learnInterval() time.Duration {
	ttl := c.Approximate.TTL
	if c.Speculative.TTL > 0 {
		ttl = min(ttl, c.Speculative.TTL)
	}
	return min(time.Second, max(50*time.Millisecond, ttl/4))
}
