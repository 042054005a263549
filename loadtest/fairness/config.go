package fairness

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/cell/flowcontrol"
)

// DefaultTrace is the committed copy of the Mooncake conversation trace.
const DefaultTrace = "loadtest/traces/conversation_trace.jsonl"

// Config says what to replay through what fleet. Every field has a
// default (DefaultConfig); Validate names the first bad field.
type Config struct {
	// TracePath is the Mooncake trace (trace.Locate finds the default
	// from anywhere inside a checkout).
	TracePath string
	// Records is how many of the trace's records are read; tenants replay
	// disjoint slices of them, wrapping around. Default 2000.
	Records int
	// MaxInputTokens caps each prompt (whole 512-token trace blocks);
	// MaxOutputTokens caps each output. Defaults 4096 and 32.
	MaxInputTokens, MaxOutputTokens int
	// Duration is how long each phase sends; the phase then waits for
	// every answer. Default 15s.
	Duration time.Duration
	// QuietLoad is the quiet tenant's rate as a fraction of its share of
	// the capacity; NoisyFactor the noisy tenant's rate in multiples of its
	// share. Defaults 0.5 and 5.
	QuietLoad, NoisyFactor float64
	// ShareWeights are the weights of the shares phase's two tenants;
	// ShareFactor is each one's rate in multiples of the whole capacity.
	// Defaults 1 and 3, and 2.
	ShareWeights [2]float64
	ShareFactor  float64
	// PriorityFactor is the rate of each of the priority phase's two
	// tenants in multiples of the capacity; PriorityMaxWait their queue
	// deadline (the tenants' max_queue_wait). Defaults 1.5 and 1s.
	PriorityFactor  float64
	PriorityMaxWait time.Duration
	// MaxQueueWait is the other tenants' queue deadline. Default 10s.
	MaxQueueWait time.Duration
	// Headroom is the cell's flow_control.headroom in the phases with
	// flow control on; the mixed_no_headroom phase runs the mixed one
	// with 0 beside it (skipped when Headroom is 0). Default the cell's
	// default.
	Headroom float64
	// Pods, MaxRunning (each pod's running batch), BlocksPerPod,
	// BlockSize, PrefillPerToken and DecodePerToken are the simulated
	// fleet. Defaults 2 pods of 2 running requests and 16384 blocks of 16
	// tokens, 50µs of prefill per uncached token, 5ms per output token.
	Pods, MaxRunning, BlocksPerPod, BlockSize int
	PrefillPerToken, DecodePerToken           time.Duration
	// Timeout bounds one request. Default 2m.
	Timeout time.Duration
	// Model is the served model's name. Default "enginesim".
	Model string
}

// DefaultConfig returns the benchmark's defaults.
func DefaultConfig() Config {
	return Config{
		TracePath: DefaultTrace, Records: 2000, MaxInputTokens: 4096, MaxOutputTokens: 32,
		Duration: 15 * time.Second, QuietLoad: 0.5, NoisyFactor: 5,
		ShareWeights: [2]float64{1, 3}, ShareFactor: 2, PriorityFactor: 1.5, PriorityMaxWait: time.Second,
		MaxQueueWait: 10 * time.Second, Headroom: flowcontrol.DefaultConfig().Headroom,
		Pods: 2, MaxRunning: 2, BlocksPerPod: 16384, BlockSize: 16,
		PrefillPerToken: 50 * time.Microsecond, DecodePerToken: 5 * time.Millisecond,
		Timeout: 2 * time.Minute, Model: "enginesim",
	}
}

// Validate names the first bad field and its value.
func (c Config) Validate() error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("fairness: %s = %v: %s", field, v, want)
	}
	switch {
	case c.TracePath == "":
		return bad("TracePath", `""`, "want a trace file")
	case c.Records < 4:
		return bad("Records", c.Records, "want at least 4")
	case c.MaxInputTokens < 512:
		return bad("MaxInputTokens", c.MaxInputTokens, "want at least one trace block (512)")
	case c.MaxOutputTokens < 1:
		return bad("MaxOutputTokens", c.MaxOutputTokens, "want at least 1")
	case c.Duration <= 0:
		return bad("Duration", c.Duration, "want over 0")
	case !(c.QuietLoad > 0):
		return bad("QuietLoad", c.QuietLoad, "want over 0")
	case !(c.NoisyFactor > 0):
		return bad("NoisyFactor", c.NoisyFactor, "want over 0")
	case !(c.ShareWeights[0] > 0) || !(c.ShareWeights[1] > 0):
		return bad("ShareWeights", c.ShareWeights, "want both over 0")
	case !(c.ShareFactor > 0):
		return bad("ShareFactor", c.ShareFactor, "want over 0")
	case !(c.PriorityFactor > 0):
		return bad("PriorityFactor", c.PriorityFactor, "want over 0")
	case c.PriorityMaxWait <= 0:
		return bad("PriorityMaxWait", c.PriorityMaxWait, "want over 0")
	case c.MaxQueueWait <= 0:
		return bad("MaxQueueWait", c.MaxQueueWait, "want over 0")
	case c.Headroom < 0 || c.Headroom >= 1 || c.Headroom != c.Headroom:
		return bad("Headroom", c.Headroom, "want 0 to under 1")
	case c.Pods < 1 || c.Pods > 256:
		return bad("Pods", c.Pods, "want 1..256")
	case c.MaxRunning < 1:
		return bad("MaxRunning", c.MaxRunning, "want at least 1")
	case c.BlocksPerPod < 1:
		return bad("BlocksPerPod", c.BlocksPerPod, "want at least 1")
	case c.BlockSize < 1:
		return bad("BlockSize", c.BlockSize, "want at least 1")
	case c.PrefillPerToken <= 0:
		return bad("PrefillPerToken", c.PrefillPerToken, "want over 0")
	case c.DecodePerToken <= 0:
		return bad("DecodePerToken", c.DecodePerToken, "want over 0")
	case c.Timeout <= 0:
		return bad("Timeout", c.Timeout, "want over 0")
	case c.Model == "":
		return bad("Model", `""`, "want a name")
	}
	return nil
}
