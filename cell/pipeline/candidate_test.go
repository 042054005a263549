package pipeline

import "testing"

func TestCandidateEvicts(t *testing.T) {
	for _, tc := range []struct {
		name               string
		held, total, store int
		want               float64
	}{
		{"size unknown", 500, 0, 100, 0},
		{"empty cache", 0, 1000, 100, 0},
		{"nothing to store", 1000, 1000, 0, 0},
		{"half full", 500, 1000, 100, 50},
		{"full", 1000, 1000, 100, 100},
		{"index ahead of the size", 1500, 1000, 100, 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Candidate{HeldBlocks: tc.held, TotalBlocks: tc.total}
			if got := c.Evicts(tc.store); got != tc.want {
				t.Fatalf("Evicts(%d) with %d of %d blocks held = %v, want %v", tc.store, tc.held, tc.total, got, tc.want)
			}
		})
	}
}
