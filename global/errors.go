package global

import "errors"

// Sentinel errors of the global tier.
var (
	// ErrNoCell is returned when no cell can take a request.
	ErrNoCell = errors.New("global: no cell available")
	// ErrInvalidConfig wraps every configuration error.
	ErrInvalidConfig = errors.New("global: invalid config")
	// ErrNoTokenizer is returned for a text prompt or chat of a model no
	// in-process tokenizer covers when remote tokenization is off: the
	// request goes the cold path.
	ErrNoTokenizer = errors.New("global: no tokenizer for the model's text prompts")
	// ErrTokenize wraps a failed remote tokenization.
	ErrTokenize = errors.New("global: remote tokenize failed")
	errNoPick   = errors.New("global: cell answered without a pick")
)
