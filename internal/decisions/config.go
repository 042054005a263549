package decisions

import (
	"flag"
	"fmt"
)

// Config sizes a daemon's ring of recent decisions.
type Config struct {
	// Size is how many recent decisions the ring keeps; 0 disables it.
	Size int `yaml:"size"`
	// TopK is how many candidates (pods at a cell, cells at the global
	// tier) of each decision's explanation a record keeps, best ranked
	// first.
	TopK int `yaml:"top_k"`
}

// DefaultConfig keeps the last 100 decisions with their top 8 candidates.
func DefaultConfig() Config { return Config{Size: 100, TopK: 8} }

// MaxSize bounds Config.Size: a record with its explanation is a few
// kilobytes, so the ring stays within tens of megabytes.
const MaxSize = 10000

// Validate checks the sizes; prefix names the config section in errors
// (such as "decisions").
func (c Config) Validate(prefix string) error {
	if c.Size < 0 || c.Size > MaxSize {
		return fmt.Errorf("%s.size %d: want 0 (off) to %d", prefix, c.Size, MaxSize)
	}
	if c.Size > 0 && c.TopK < 1 {
		return fmt.Errorf("%s.top_k %d: want at least 1", prefix, c.TopK)
	}
	return nil
}

// BindFlags defines --decisions and --decisions-top-k on fs with d's
// values as defaults. The returned function applies the flags given on the
// command line to c (flags not given leave c as it is, so a configuration
// file's values stand).
func BindFlags(fs *flag.FlagSet, d Config) func(c *Config) {
	size := fs.Int("decisions", d.Size, "how many recent routing decisions to keep, with their explanations, for GET /v1/<tier>/decisions (0: off)")
	topK := fs.Int("decisions-top-k", d.TopK, "how many candidates of each recent decision's explanation to keep, best ranked first")
	return func(c *Config) {
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "decisions":
				c.Size = *size
			case "decisions-top-k":
				c.TopK = *topK
			}
		})
	}
}
