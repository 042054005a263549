package vllmwire

import "fmt"

// Limits bounds what a decoder accepts from one message, so that a hostile or
// broken publisher cannot make the decoder allocate without bound or recurse
// deeply. A zero field means the default from DefaultLimits. Independently of
// Limits, the decoder never allocates for an array more elements than the
// payload has bytes left, so a tiny message cannot claim a huge array.
type Limits struct {
	// MaxEvents is the most events one batch may hold.
	MaxEvents int
	// MaxBlocksPerEvent is the most block hashes (and extra_keys entries)
	// one event may hold. SGLang with page size 1 sends one block per token,
	// so this is sized for long prompts.
	MaxBlocksPerEvent int
	// MaxTokensPerEvent is the most token ids one BlockStored may hold; it
	// also bounds block_size.
	MaxTokensPerEvent int
	// MaxDepth is the deepest nesting of arrays and maps accepted inside a
	// value the decoder skips (unknown fields) or renders (extra_keys).
	MaxDepth int
	// MaxStringLen is the longest string or byte string accepted (medium,
	// lora_name, tags, map keys, raw hashes), and the longest rendered
	// extra key.
	MaxStringLen int
}

// DefaultLimits returns limits generous enough for any real engine message:
// 65536 events, 131072 blocks and 1<<20 tokens per event, depth 16, strings
// of 4096 bytes.
func DefaultLimits() Limits {
	return Limits{
		MaxEvents:         1 << 16,
		MaxBlocksPerEvent: 1 << 17,
		MaxTokensPerEvent: 1 << 20,
		MaxDepth:          16,
		MaxStringLen:      4096,
	}
}

// Validate reports the first negative field. Zero fields are valid: they mean
// the default.
func (l Limits) Validate() error {
	for _, f := range [...]struct {
		name string
		v    int
	}{
		{"MaxEvents", l.MaxEvents},
		{"MaxBlocksPerEvent", l.MaxBlocksPerEvent},
		{"MaxTokensPerEvent", l.MaxTokensPerEvent},
		{"MaxDepth", l.MaxDepth},
		{"MaxStringLen", l.MaxStringLen},
	} {
		if f.v < 0 {
			return fmt.Errorf("vllmwire: Limits.%s = %d: must not be negative", f.name, f.v)
		}
	}
	return nil
}

// withDefaults returns l with every non-positive field replaced by its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxEvents <= 0 {
		l.MaxEvents = d.MaxEvents
	}
	if l.MaxBlocksPerEvent <= 0 {
		l.MaxBlocksPerEvent = d.MaxBlocksPerEvent
	}
	if l.MaxTokensPerEvent <= 0 {
		l.MaxTokensPerEvent = d.MaxTokensPerEvent
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxStringLen <= 0 {
		l.MaxStringLen = d.MaxStringLen
	}
	return l
}
