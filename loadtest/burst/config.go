package burst

import (
	"fmt"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/compare"
)

// Config says which bursts to send, and to what fleet.
type Config struct {
	// Sizes are the burst sizes N, each run once with and once without
	// speculative entries. Default 8 and 32.
	Sizes []int
	// Window is the time over which a burst's requests arrive, evenly
	// spread. Default 50ms.
	Window time.Duration
	// PrefixTokens is the length of the shared prefix, new to the fleet;
	// SuffixTokens the tokens each request adds of its own. Default 8192
	// (512 blocks: 205 ms of prefill at 25 µs a token) and 32.
	PrefixTokens, SuffixTokens int
	// MaxTokens is each request's output length. Default 16.
	MaxTokens int
	// SpeculativeTTL is the speculative run's entry lifetime (the cell's
	// speculative.ttl). Default 2s.
	SpeculativeTTL time.Duration
	// Timeout bounds one request.
	Timeout time.Duration
	// Repeat runs every burst this many times (each on a cold fleet and a
	// fresh cell) and reports the median run. Default 1.
	Repeat int

	// Pods, BlocksPerPod, BlockSize, PrefillPerToken, DecodePerToken,
	// MaxRunning, KVOverlapWeight and Model are the fleet and cost model;
	// defaults from loadtest compare.
	Pods            int
	BlocksPerPod    int
	BlockSize       int
	PrefillPerToken time.Duration
	DecodePerToken  time.Duration
	MaxRunning      int
	KVOverlapWeight float64
	Model           string
}

// DefaultConfig returns bursts of 8 and 32 requests within 50 ms sharing
// an 8192-token prefix, on compare's fleet: 8 pods of 8,192 blocks, 25 µs
// of prefill per token, at most 4 requests running per pod, overlap weight
// 12.
func DefaultConfig() Config {
	c := compare.DefaultConfig()
	return Config{
		Sizes: []int{8, 32}, Window: 50 * time.Millisecond, PrefixTokens: 8192, SuffixTokens: 32, MaxTokens: 16,
		SpeculativeTTL: 2 * time.Second, Timeout: time.Minute, Repeat: 1,
		Pods: c.Pods, BlocksPerPod: c.BlocksPerPod, BlockSize: c.BlockSize, PrefillPerToken: c.PrefillPerToken,
		DecodePerToken: c.DecodePerToken, MaxRunning: c.MaxRunning, KVOverlapWeight: c.KVOverlapWeight, Model: c.Model,
	}
}

// Validate names the first bad field and its value.
func (c Config) Validate() error {
	for _, n := range c.Sizes {
		if n < 1 || n > 4096 {
			return fmt.Errorf("burst: Sizes has %d, want 1..4096", n)
		}
	}
	switch {
	case len(c.Sizes) == 0:
		return fmt.Errorf("burst: Sizes is empty")
	case c.Window < 0:
		return fmt.Errorf("burst: Window = %v, want >= 0", c.Window)
	case c.BlockSize < 1:
		return fmt.Errorf("burst: BlockSize = %d, want >= 1", c.BlockSize)
	case c.PrefixTokens < c.BlockSize:
		return fmt.Errorf("burst: PrefixTokens = %d, want at least one block (%d)", c.PrefixTokens, c.BlockSize)
	case c.SuffixTokens < 1:
		return fmt.Errorf("burst: SuffixTokens = %d, want >= 1", c.SuffixTokens)
	case c.MaxTokens < 1:
		return fmt.Errorf("burst: MaxTokens = %d, want >= 1", c.MaxTokens)
	case c.SpeculativeTTL <= 0:
		return fmt.Errorf("burst: SpeculativeTTL = %v, want > 0", c.SpeculativeTTL)
	case c.Timeout <= 0:
		return fmt.Errorf("burst: Timeout = %v, want > 0", c.Timeout)
	case c.Repeat < 1 || c.Repeat > 1000:
		return fmt.Errorf("burst: Repeat = %d, want 1..1000", c.Repeat)
	case c.Pods < 1 || c.Pods > 256:
		return fmt.Errorf("burst: Pods = %d, want 1..256", c.Pods)
	case c.BlocksPerPod < 1:
		return fmt.Errorf("burst: BlocksPerPod = %d, want >= 1", c.BlocksPerPod)
	case c.MaxRunning < 1:
		return fmt.Errorf("burst: MaxRunning = %d, want >= 1", c.MaxRunning)
	case c.KVOverlapWeight < 0:
		return fmt.Errorf("burst: KVOverlapWeight = %v, want >= 0", c.KVOverlapWeight)
	case c.Model == "":
		return fmt.Errorf("burst: Model is empty")
	}
	return nil
}
