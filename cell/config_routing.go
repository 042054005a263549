package cell

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/internal/proxy"
)

// RoutingConfig configures the cell's routing pipeline and data plane.
type RoutingConfig struct {
	// Profiles are routing profiles (see package pipeline). A profile named
	// "default" is added when none is, built from the three reference
	// router parameters below.
	Profiles []pipeline.ProfileConfig `yaml:"profiles"`
	// Profile is the profile of aggregated requests.
	Profile string `yaml:"profile"`
	// PrefillProfile and DecodeProfile, set together, make the cell plan
	// disaggregated prefill then decode instead.
	PrefillProfile string `yaml:"prefill_profile"`
	DecodeProfile  string `yaml:"decode_profile"`

	// KVOverlapScoreWeight is the default profile's weight of prefill
	// blocks against decode blocks in its cost.
	KVOverlapScoreWeight float64 `yaml:"kv_overlap_score_weight"`
	// KVPressureWeight is the default profile's weight of cache pressure
	// in kv-cost: the cost of one cached block a pod is expected to evict
	// to store the request's blocks it lacks (pipeline.Candidate.Evicts,
	// from the blocks the index holds for the pod against its kv_blocks),
	// against one block of decode load. 0 counts no pressure, as the
	// reference router does. Pods without kv_blocks pay none.
	KVPressureWeight float64 `yaml:"kv_pressure_weight"`
	// Cost is the default profile's cost model: the expected time to first
	// token (queue wait plus prefill) or the reference router's blocks.
	Cost CostConfig `yaml:"cost"`
	// PrefixWait holds a request sent to a pod that is still prefilling
	// part of its prefix until that prefill ends (see PrefixWaitConfig).
	PrefixWait PrefixWaitConfig `yaml:"prefix_wait"`
	// RouterTemperature is the default profile's softmax temperature over
	// normalised costs; 0 picks the lowest cost.
	RouterTemperature float64 `yaml:"router_temperature"`
	// BusyThreshold is the default profile's busy threshold: a pod whose
	// active blocks exceed this fraction of kv_blocks is skipped.
	BusyThreshold float64 `yaml:"busy_threshold"`

	// SessionHeader names the header that carries a session id; SessionTTL
	// is how long a session remembers its pod.
	SessionHeader string        `yaml:"session_header"`
	SessionTTL    time.Duration `yaml:"session_ttl"`

	// ConnectTimeout, ResponseHeaderTimeout and RequestTimeout bound the
	// upstream call (see proxy.Config); MaxAttempts is the pods tried
	// before the first byte.
	ConnectTimeout        time.Duration `yaml:"connect_timeout"`
	ResponseHeaderTimeout time.Duration `yaml:"response_header_timeout"`
	RequestTimeout        time.Duration `yaml:"request_timeout"`
	MaxAttempts           int           `yaml:"max_attempts"`
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// PromptLimits bound each model's prompt: its text before the cell
	// tokenizes it (max_bytes) and its tokens (max_tokens), with
	// per-model overrides (models); past either, 400
	// context_length_exceeded. Defaults 4 MiB and 1,048,576 tokens.
	PromptLimits openai.PromptLimits `yaml:"prompt_limits"`
	// RelayResponseHeaders are the pods' response headers relayed to the
	// client (a trailing "*" matches a prefix); the rest, and any whose
	// value names the pod's host, stay in the cell. The cell's own
	// X-Cellrouter-* headers are always sent. Default
	// proxy.DefaultRelayResponseHeaders.
	RelayResponseHeaders []string `yaml:"relay_response_headers"`

	// TokenizerJSON is a Hugging Face tokenizer.json for in-process
	// tokenisation of text prompts; empty sends text to a pod's /tokenize.
	TokenizerJSON string `yaml:"tokenizer_json"`
	// ChatTemplate names the built-in chat template used with TokenizerJSON
	// (chatml, llama3); empty tokenises chats through a pod's /tokenize.
	ChatTemplate string `yaml:"chat_template"`
	// TokenizeTimeout bounds a remote /tokenize call.
	TokenizeTimeout time.Duration `yaml:"tokenize_timeout"`

	// Watch bounds the waits on pods that stopped answering and ejects
	// them (routing.watch).
	Watch WatchConfig `yaml:"watch"`

	// CandidatesTTL is how long the cell reuses its list of pods between
	// decisions (loads are always fresh).
	CandidatesTTL time.Duration `yaml:"candidates_ttl"`
}

// DefaultRoutingConfig returns the reference router's defaults.
func DefaultRoutingConfig() RoutingConfig {
	p := proxy.DefaultConfig()
	return RoutingConfig{
		Profile:               "default",
		KVOverlapScoreWeight:  1,
		KVPressureWeight:      plugins.DefaultPressureWeight,
		Cost:                  DefaultCostConfig(),
		PrefixWait:            DefaultPrefixWaitConfig(),
		RouterTemperature:     0,
		BusyThreshold:         0.95,
		SessionHeader:         "X-Session-Id",
		SessionTTL:            10 * time.Minute,
		ConnectTimeout:        p.ConnectTimeout,
		ResponseHeaderTimeout: p.ResponseHeaderTimeout,
		RequestTimeout:        p.RequestTimeout,
		MaxAttempts:           p.MaxAttempts,
		MaxBodyBytes:          32 << 20,
		PromptLimits:          openai.DefaultPromptLimits(),
		RelayResponseHeaders:  p.RelayResponseHeaders,
		TokenizeTimeout:       5 * time.Second,
		CandidatesTTL:         100 * time.Millisecond,
		Watch:                 DefaultWatchConfig(),
	}
}

func (r RoutingConfig) proxyConfig() proxy.Config {
	p := proxy.DefaultConfig()
	p.ConnectTimeout = r.ConnectTimeout
	p.ResponseHeaderTimeout = r.ResponseHeaderTimeout
	p.RequestTimeout = r.RequestTimeout
	p.MaxAttempts = r.MaxAttempts
	p.Watch = r.Watch.proxy()
	p.RelayResponseHeaders = r.RelayResponseHeaders
	return p
}

// validate checks the fields that need no plug-in registry (profiles are
// validated when they are built).
func (r RoutingConfig) validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: routing.%s = %v: %s", ErrConfig, field, v, why)
	}
	switch {
	case r.KVOverlapScoreWeight < 0:
		return bad("kv_overlap_score_weight", r.KVOverlapScoreWeight, "must not be negative")
	case !(r.KVPressureWeight >= 0):
		return bad("kv_pressure_weight", r.KVPressureWeight, "must not be negative")
	case r.RouterTemperature < 0:
		return bad("router_temperature", r.RouterTemperature, "must not be negative")
	case r.BusyThreshold <= 0 || r.BusyThreshold > 1:
		return bad("busy_threshold", r.BusyThreshold, "want (0, 1]")
	case (r.PrefillProfile == "") != (r.DecodeProfile == ""):
		return bad("prefill_profile", r.PrefillProfile, "set prefill_profile and decode_profile together")
	case r.PrefillProfile == "" && r.Profile == "":
		return bad("profile", `""`, "name the aggregated profile")
	case r.SessionHeader == "":
		return bad("session_header", `""`, "must not be empty")
	case r.SessionTTL <= 0:
		return bad("session_ttl", r.SessionTTL, "must be positive")
	case r.MaxBodyBytes < 1024:
		return bad("max_body_bytes", r.MaxBodyBytes, "want at least 1024")
	case r.TokenizeTimeout <= 0:
		return bad("tokenize_timeout", r.TokenizeTimeout, "must be positive")
	case r.CandidatesTTL < 0:
		return bad("candidates_ttl", r.CandidatesTTL, "must not be negative")
	case r.ChatTemplate != "" && r.TokenizerJSON == "":
		return bad("chat_template", r.ChatTemplate, "needs tokenizer_json")
	}
	if err := r.PrefixWait.validate(); err != nil {
		return err
	}
	if err := r.Cost.validate(); err != nil {
		return err
	}
	if err := proxy.CheckRelayHeaders(r.RelayResponseHeaders); err != nil {
		return bad("relay_response_headers", r.RelayResponseHeaders, err.Error())
	}
	if err := r.proxyConfig().Validate(); err != nil {
		return fmt.Errorf("%w: routing: %v", ErrConfig, err)
	}
	if err := r.PromptLimits.Validate("routing.prompt_limits"); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	return nil
}
