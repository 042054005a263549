package trace

import (
	"testing"
)

// FuzzDecodeLine checks that DecodeLine never panics and that whatever it
// accepts satisfies Record.Validate.
func FuzzDecodeLine(f *testing.F) {
	seeds := []string{
		`{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}`,
		`{"timestamp": 27, "input_length": 1025, "output_length": 3, "hash_ids": [0, 5, 9]}`,
		`{"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": [7]}`,
		`{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []}`,
		`{"timestamp": 1, "input_length": 513, "output_length": 1, "hash_ids": [7]}`,
		`{"timestamp": 1e3, "input_length": 5, "output_length": 1, "hash_ids": [18446744073709551615]}`,
		`{"timestamp": 1,`,
		`null`,
		``,
		`[]`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		rec, err := DecodeLine(line)
		if err != nil {
			return
		}
		if verr := rec.Validate(); verr != nil {
			t.Fatalf("DecodeLine(%q) accepted a record that fails Validate: %v", line, verr)
		}
	})
}
