package trace

import (
	"encoding/json"
	"errors"
	"fmt"
)

// TokensPerID is the number of prompt tokens one Mooncake hash id stands for.
const TokensPerID = 512

// MaxHashIDs bounds the number of hash ids on one line (about 8M tokens), so
// that a corrupt line cannot make the decoder hold an absurd request.
const MaxHashIDs = 1 << 14

// Record is one request of a trace.
type Record struct {
	// Timestamp is the arrival time in milliseconds from the start of the trace.
	Timestamp int64
	// InputLength is the prompt length in tokens; it is at least 1.
	InputLength int
	// OutputLength is the number of generated tokens; it is at least 1.
	OutputLength int
	// HashIDs names the prompt's 512-token blocks in order; the last one may
	// stand for a partial block. len(HashIDs) == ExpectedIDs(InputLength).
	HashIDs []uint64
}

// ExpectedIDs returns the number of hash ids a prompt of inputLength tokens
// has in a Mooncake trace: ceil(inputLength/512).
func ExpectedIDs(inputLength int) int {
	return (inputLength + TokensPerID - 1) / TokensPerID
}

// Errors DecodeLine wraps, so that callers can tell the kinds of bad lines apart.
var (
	// ErrSyntax means the line is not a JSON object of the expected shape.
	ErrSyntax = errors.New("trace: bad JSON")
	// ErrMissingField means a required field is absent or null.
	ErrMissingField = errors.New("trace: missing field")
	// ErrBadValue means a field is present but out of range or inconsistent.
	ErrBadValue = errors.New("trace: bad value")
)

// wireRecord is the JSON shape of a line. Pointers tell an absent field from
// a zero one; unknown fields are ignored, so traces with extra columns load.
type wireRecord struct {
	Timestamp    *int64   `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
	HashIDs      []uint64 `json:"hash_ids"`
}

// DecodeLine decodes and validates one trace line. Surrounding white space is
// allowed; anything else that is not exactly one JSON object with valid
// fields is an error wrapping ErrSyntax, ErrMissingField or ErrBadValue.
// The returned Record does not alias line.
func DecodeLine(line []byte) (Record, error) {
	var w wireRecord
	if err := json.Unmarshal(line, &w); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrSyntax, err)
	}
	switch {
	case w.Timestamp == nil:
		return Record{}, fmt.Errorf("%w: timestamp", ErrMissingField)
	case w.InputLength == nil:
		return Record{}, fmt.Errorf("%w: input_length", ErrMissingField)
	case w.OutputLength == nil:
		return Record{}, fmt.Errorf("%w: output_length", ErrMissingField)
	case w.HashIDs == nil:
		return Record{}, fmt.Errorf("%w: hash_ids", ErrMissingField)
	}
	r := Record{Timestamp: *w.Timestamp, HashIDs: w.HashIDs}
	if err := checkLength("input_length", *w.InputLength, &r.InputLength); err != nil {
		return Record{}, err
	}
	if err := checkLength("output_length", *w.OutputLength, &r.OutputLength); err != nil {
		return Record{}, err
	}
	if err := r.Validate(); err != nil {
		return Record{}, err
	}
	return r, nil
}

// checkLength stores v in *dst if it is a positive token count that fits the
// bounds of a trace line, and otherwise returns an error naming the field.
func checkLength(field string, v int64, dst *int) error {
	if v <= 0 {
		return fmt.Errorf("%w: %s must be > 0, got %d", ErrBadValue, field, v)
	}
	if v > MaxHashIDs*TokensPerID {
		return fmt.Errorf("%w: %s %d exceeds %d", ErrBadValue, field, v, MaxHashIDs*TokensPerID)
	}
	*dst = int(v)
	return nil
}

// Validate checks the invariants of a Record: a non-negative timestamp,
// positive lengths, and ceil(InputLength/512) hash ids, at least one.
func (r Record) Validate() error {
	switch {
	case r.Timestamp < 0:
		return fmt.Errorf("%w: timestamp must be >= 0, got %d", ErrBadValue, r.Timestamp)
	case r.InputLength <= 0:
		return fmt.Errorf("%w: input_length must be > 0, got %d", ErrBadValue, r.InputLength)
	case r.OutputLength <= 0:
		return fmt.Errorf("%w: output_length must be > 0, got %d", ErrBadValue, r.OutputLength)
	case len(r.HashIDs) == 0:
		return fmt.Errorf("%w: hash_ids is empty", ErrBadValue)
	case len(r.HashIDs) > MaxHashIDs:
		return fmt.Errorf("%w: %d hash_ids exceed %d", ErrBadValue, len(r.HashIDs), MaxHashIDs)
	}
	if want := ExpectedIDs(r.InputLength); len(r.HashIDs) != want {
		return fmt.Errorf("%w: %d hash_ids for input_length %d, want ceil(%d/%d) = %d",
			ErrBadValue, len(r.HashIDs), r.InputLength, r.InputLength, TokensPerID, want)
	}
	return nil
}
