package enginemetrics

import (
	"fmt"
	"strings"
	"time"
)

// Config configures the scraping of the engines' metrics (the cell's
// engine_metrics section).
type Config struct {
	// Enabled scrapes each pod's Prometheus endpoint, and adds the engine
	// load plug-ins to the default routing profile.
	Enabled bool `yaml:"enabled"`
	// Path is the metrics path on the pod's HTTP address.
	Path string `yaml:"path"`
	// Interval is the time between two scrapes of a pod.
	Interval time.Duration `yaml:"interval"`
	// StaleAfter is how old a pod's last good scrape may be before the
	// plug-ins fall back to the router's own estimate for it.
	StaleAfter time.Duration `yaml:"stale_after"`
	// Timeout bounds one scrape (connect, answer and body).
	Timeout time.Duration `yaml:"timeout"`
	// Engine chooses the metric names: auto (whichever family appears,
	// vLLM first), vllm or sglang.
	Engine Engine `yaml:"engine"`
	// Names overrides metric names by key (waiting, running, kv_usage,
	// lora_info, cache_config).
	Names map[string]string `yaml:"names"`
	// Concurrency bounds the scrapes in flight at once.
	Concurrency int `yaml:"concurrency"`
	// MaxBodyBytes bounds a metrics page; a longer one is a failed scrape.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// LoRAAffinityWeight is the lora-affinity scorer's weight in the
	// default profile, in KV blocks: a pod with the request's adapter
	// loaded wins over one without it when their costs differ by less.
	LoRAAffinityWeight float64 `yaml:"lora_affinity_weight"`
}

// DefaultConfig returns the defaults: enabled, /metrics every 200 ms with
// a 150 ms timeout, stale after 2 s, names chosen automatically.
func DefaultConfig() Config {
	return Config{
		Enabled:            true,
		Path:               "/metrics",
		Interval:           200 * time.Millisecond,
		StaleAfter:         2 * time.Second,
		Timeout:            150 * time.Millisecond,
		Engine:             EngineAuto,
		Concurrency:        32,
		MaxBodyBytes:       4 << 20,
		LoRAAffinityWeight: 16,
	}
}

// Validate checks the fields, naming the bad one (with prefix, e.g.
// "engine_metrics").
func (c *Config) Validate(prefix string) error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%s.%s = %v: %s", prefix, field, v, why)
	}
	if !strings.HasPrefix(c.Path, "/") {
		return bad("path", fmt.Sprintf("%q", c.Path), "want an absolute path")
	}
	if c.Interval <= 0 {
		return bad("interval", c.Interval, "want > 0")
	}
	if c.Timeout <= 0 {
		return bad("timeout", c.Timeout, "want > 0")
	}
	if c.StaleAfter < c.Interval {
		return bad("stale_after", c.StaleAfter, fmt.Sprintf("want >= interval (%v)", c.Interval))
	}
	if c.Concurrency < 1 {
		return bad("concurrency", c.Concurrency, "want >= 1")
	}
	if c.MaxBodyBytes < 1024 {
		return bad("max_body_bytes", c.MaxBodyBytes, "want >= 1024")
	}
	if c.LoRAAffinityWeight < 0 {
		return bad("lora_affinity_weight", c.LoRAAffinityWeight, "want >= 0")
	}
	if _, err := NamesFor(c.Engine, c.Names); err != nil {
		return bad("engine/names", c.Engine, err.Error())
	}
	return nil
}
