package cell

import (
	"fmt"

	"github.com/cellrouter/cellrouter/cell/plugins"
)

// The cost models of the default profile (routing.cost.model).
const (
	// CostTTFT is the expected time to first token: queue wait from the
	// pod's load plus prefill of the blocks it does not hold (ttft-cost).
	CostTTFT = "ttft"
	// CostBlocks is the reference KV router's cost: overlap weight times
	// blocks to prefill plus active blocks (kv-cost).
	CostBlocks = "blocks"
)

// CostConfig is the default profile's cost (routing.cost): what sending a
// request to a pod costs. With model "ttft" the engine model's
// coefficients below turn the pod's load and the request's cache match
// into an expected time to first token (see plugins.TTFTCost); with model
// "blocks" the cost is the reference KV router's, in blocks, and the
// coefficients are unused.
type CostConfig struct {
	// Model is "blocks" (default) or "ttft". blocks stays the default:
	// on the conversation trace ttft kept less of the reachable reuse
	// and was slower (loadtest compare --quick --rate 1,2, two runs of each
	// alternated: cached/reachable 0.79 against 0.89-0.90 at x1, TTFT p50
	// 67-68 ms against 53-55 ms); see plugins.TTFTCost.
	Model string `yaml:"model"`
	// PrefillPerTokenUs is the engines' prefill time of one uncached
	// prompt token, in microseconds. Default 25 (40k tokens/s).
	PrefillPerTokenUs float64 `yaml:"prefill_per_token_us"`
	// DecodePerTokenMs is the time of one output token of one request in a
	// running batch, in milliseconds. Default 10.
	DecodePerTokenMs float64 `yaml:"decode_per_token_ms"`
	// DecodeTokens is the output tokens a request is expected to decode.
	// Default 128.
	DecodeTokens float64 `yaml:"decode_tokens"`
	// MaxRunning is the requests an engine runs at once before new ones
	// queue. Default 8.
	MaxRunning int `yaml:"max_running"`
}

// DefaultCostConfig returns the blocks model, with plugins.DefaultTTFTCost's
// coefficients for a switch to ttft.
func DefaultCostConfig() CostConfig {
	d := plugins.DefaultTTFTCost()
	return CostConfig{Model: CostBlocks, PrefillPerTokenUs: d.PrefillPerTokenUs, DecodePerTokenMs: d.DecodePerTokenMs,
		DecodeTokens: d.DecodeTokens, MaxRunning: d.MaxRunning}
}

// validate names the first bad field and its value.
func (c CostConfig) validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: routing.cost.%s = %v: %s", ErrConfig, field, v, why)
	}
	switch {
	case c.Model != CostTTFT && c.Model != CostBlocks:
		return bad("model", fmt.Sprintf("%q", c.Model), `want "ttft" or "blocks"`)
	case !(c.PrefillPerTokenUs >= 0):
		return bad("prefill_per_token_us", c.PrefillPerTokenUs, "must not be negative")
	case !(c.DecodePerTokenMs >= 0):
		return bad("decode_per_token_ms", c.DecodePerTokenMs, "must not be negative")
	case !(c.DecodeTokens >= 0):
		return bad("decode_tokens", c.DecodeTokens, "must not be negative")
	case c.MaxRunning < 1:
		return bad("max_running", c.MaxRunning, "want at least 1")
	}
	return nil
}

// ttft is the ttft-cost scorer's parameters, speculative blocks counted at
// specWeight (speculative.weight).
func (c CostConfig) ttft(specWeight float64) plugins.TTFTCost {
	return plugins.TTFTCost{PrefillPerTokenUs: c.PrefillPerTokenUs, DecodePerTokenMs: c.DecodePerTokenMs,
		DecodeTokens: c.DecodeTokens, MaxRunning: c.MaxRunning, SpeculativeWeight: specWeight}
}
