package trace

import (
	"errors"
	"slices"
	"testing"
)

func TestDecodeLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    Record
		wantErr error
	}{
		{
			name: "valid",
			line: `{"timestamp": 27, "input_length": 1025, "output_length": 3, "hash_ids": [0, 5, 9]}`,
			want: Record{Timestamp: 27, InputLength: 1025, OutputLength: 3, HashIDs: []uint64{0, 5, 9}},
		},
		{
			name: "exact multiple of 512",
			line: `{"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [1, 2]}`,
			want: Record{Timestamp: 0, InputLength: 1024, OutputLength: 1, HashIDs: []uint64{1, 2}},
		},
		{
			name: "unknown fields ignored",
			line: `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [7], "extra": "x"}`,
			want: Record{Timestamp: 1, InputLength: 5, OutputLength: 1, HashIDs: []uint64{7}},
		},
		{name: "not json", line: `{"timestamp": 1,`, wantErr: ErrSyntax},
		{name: "trailing data", line: `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [7]} {}`, wantErr: ErrSyntax},
		{name: "array", line: `[1, 2]`, wantErr: ErrSyntax},
		{name: "string length", line: `{"timestamp": 1, "input_length": "5", "output_length": 1, "hash_ids": [7]}`, wantErr: ErrSyntax},
		{name: "negative hash id", line: `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [-7]}`, wantErr: ErrSyntax},
		{name: "fractional length", line: `{"timestamp": 1, "input_length": 5.5, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrSyntax},
		{name: "null", line: `null`, wantErr: ErrMissingField},
		{name: "missing timestamp", line: `{"input_length": 5, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrMissingField},
		{name: "missing input", line: `{"timestamp": 1, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrMissingField},
		{name: "missing output", line: `{"timestamp": 1, "input_length": 5, "hash_ids": [7]}`, wantErr: ErrMissingField},
		{name: "missing hash ids", line: `{"timestamp": 1, "input_length": 5, "output_length": 1}`, wantErr: ErrMissingField},
		{name: "negative timestamp", line: `{"timestamp": -1, "input_length": 5, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrBadValue},
		{name: "zero input", line: `{"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrBadValue},
		{name: "negative input", line: `{"timestamp": 1, "input_length": -5, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrBadValue},
		{name: "zero output", line: `{"timestamp": 1, "input_length": 5, "output_length": 0, "hash_ids": [7]}`, wantErr: ErrBadValue},
		{name: "huge input", line: `{"timestamp": 1, "input_length": 99999999999, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrBadValue},
		{name: "empty hash ids", line: `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": []}`, wantErr: ErrBadValue},
		{name: "too few hash ids", line: `{"timestamp": 1, "input_length": 513, "output_length": 1, "hash_ids": [7]}`, wantErr: ErrBadValue},
		{name: "too many hash ids", line: `{"timestamp": 1, "input_length": 512, "output_length": 1, "hash_ids": [7, 8]}`, wantErr: ErrBadValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeLine([]byte(tt.line))
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("DecodeLine(%s) error = %v, want %v", tt.line, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeLine(%s) error = %v, want nil", tt.line, err)
			}
			if got.Timestamp != tt.want.Timestamp || got.InputLength != tt.want.InputLength ||
				got.OutputLength != tt.want.OutputLength || !slices.Equal(got.HashIDs, tt.want.HashIDs) {
				t.Errorf("DecodeLine(%s) got %+v, want %+v", tt.line, got, tt.want)
			}
		})
	}
}

func TestExpectedIDs(t *testing.T) {
	tests := []struct{ in, want int }{{1, 1}, {511, 1}, {512, 1}, {513, 2}, {1024, 2}, {6758, 14}}
	for _, tt := range tests {
		if got := ExpectedIDs(tt.in); got != tt.want {
			t.Errorf("ExpectedIDs(%d) got %d, want %d", tt.in, got, tt.want)
		}
	}
}
