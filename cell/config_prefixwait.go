package cell

import (
	"flag"
	"fmt"
	"time"
)

// PrefixWaitConfig is the prefix wait (routing.prefix_wait): a request
// sent to a pod that is still prefilling part of the request's own prefix
// (the previous turn of its conversation, or the first of a burst of one
// new prompt, routed there moments ago) waits until that prefill ends
// before it goes, instead of starting beside it. An engine stores a
// prompt's blocks when its prefill ends, so a request that starts earlier
// computes them again: it pays their prefill itself, takes a running slot
// from the pod that computes them, and fills the pod's cache twice.
//
// The wait is weighed against going at once, from the engine model of
// routing.cost (see plugins.TTFTCost): the queue wait it expects at the
// pod plus the prefill of the blocks the request gains (gained blocks x
// block_size x prefill_per_token_us). A request waits only for a prefill
// expected to end within that (its blocks' prefill time less the time
// since it was sent: a long prompt that shares a short prefix with the
// request is not worth waiting for), and at most that long: past it the
// request would have computed the blocks itself (PrefixWaitBound).
// max_wait caps every wait.
// Requests the cell picks for a gateway (picker mode) wait alike: the
// cell holds its answer, the destination, and the gateway sends the
// request when the wait ends.
type PrefixWaitConfig struct {
	// Enabled turns the prefix wait on.
	Enabled bool `yaml:"enabled"`
	// MaxWait caps one request's wait, whatever it gains.
	MaxWait time.Duration `yaml:"max_wait"`
}

// DefaultPrefixWaitConfig returns the prefix wait on, capped at 5 s.
func DefaultPrefixWaitConfig() PrefixWaitConfig {
	return PrefixWaitConfig{Enabled: true, MaxWait: 5 * time.Second}
}

// validate names the first bad field and its value.
func (c PrefixWaitConfig) validate() error {
	if c.MaxWait < 0 {
		return fmt.Errorf("%w: routing.prefix_wait.max_wait = %v: must not be negative", ErrConfig, c.MaxWait)
	}
	return nil
}

// PrefixWaitBound decides the prefix wait: how long at most a request
// should wait for a pod's prefill in progress that will store gain more
// blocks of its prefix, 0 for not at all. Going at once, the request would
// start after queue (the wait the engine model expects from the pod's
// load) and compute those blocks itself (gain x blockSize tokens at
// prefillPerTokenUs each); waiting, it starts when the prefill ends,
// expected after remaining. It waits when remaining is within that, and
// then at most that long, capped at maxWait: past it the prefill is late,
// and the request would have computed the blocks by then. It returns 0
// when nothing is gained or the wait is off (maxWait 0).
func PrefixWaitBound(gain, blockSize int, prefillPerTokenUs float64, queue, remaining, maxWait time.Duration) time.Duration {
	if gain <= 0 || blockSize <= 0 || !(prefillPerTokenUs > 0) || maxWait <= 0 {
		return 0
	}
	self := time.Duration(float64(gain)*float64(blockSize)*prefillPerTokenUs*float64(time.Microsecond)) + max(0, queue)
	if remaining > self {
		return 0
	}
	return min(self, maxWait)
}

// PrefixRemaining is when a prefill of work blocks, sent elapsed ago, is
// expected to end: its prefill time from the engine model less the time
// it has had (it may have queued, so this is the earliest).
func PrefixRemaining(work, blockSize int, prefillPerTokenUs float64, elapsed time.Duration) time.Duration {
	d := time.Duration(float64(work)*float64(blockSize)*prefillPerTokenUs*float64(time.Microsecond)) - elapsed
	return max(0, d)
}

// BindPrefixWaitFlags adds the prefix wait's flags to fs: --prefix-wait
// and --prefix-wait-max override routing.prefix_wait.enabled and max_wait
// when given. The returned function applies them to a config.
func BindPrefixWaitFlags(fs *flag.FlagSet) func(*PrefixWaitConfig) {
	d := DefaultPrefixWaitConfig()
	on := fs.Bool("prefix-wait", d.Enabled, "hold a request sent to a pod that is still prefilling part of its prefix until that prefill ends, at most the prefill it saves (overrides routing.prefix_wait.enabled)")
	maxWait := fs.Duration("prefix-wait-max", d.MaxWait, "cap of one request's prefix wait (overrides routing.prefix_wait.max_wait)")
	return func(c *PrefixWaitConfig) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "prefix-wait":
				c.Enabled = *on
			case "prefix-wait-max":
				c.MaxWait = *maxWait
			}
		})
	}
}
