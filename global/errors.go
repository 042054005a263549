package global

import "errors"

// Sentinel errors of the global tier.
var (
	// ErrNoCell is returned when no cell can take a request.
	ErrNoCell = errors.New("global: no cell available")
	// ErrInvalidConfig wraps every configuration error.
	ErrInvalidConfig = errors.New("global: invalid config")
	errNoPick        = errors.New("global: cell answered without a pick")
)
