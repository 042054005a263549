package epp

import (
	"fmt"

	"github.com/cellrouter/cellrouter/api/openai"
)

// Config tunes the external processor.
type Config struct {
	// MaxBodyBytes bounds a request body the server assembles from the
	// gateway's chunks; a larger body is answered 413 without a pick.
	MaxBodyBytes int64
}

// DefaultConfig returns the defaults: bodies up to openai.DefaultMaxBodyBytes
// (32 MiB), as the HTTP data plane takes.
func DefaultConfig() Config {
	return Config{MaxBodyBytes: openai.DefaultMaxBodyBytes}
}

// Validate checks c.
func (c Config) Validate() error {
	if c.MaxBodyBytes <= 0 {
		return fmt.Errorf("epp: max_body_bytes %d: must be positive", c.MaxBodyBytes)
	}
	return nil
}
