package main

import (
	"slices"
	"testing"
)

// TestParseRates checks --rate: positive multipliers, comma-separated,
// anything else refused with the flag's value named.
func TestParseRates(t *testing.T) {
	got, err := parseRates("1, 2,4.5")
	if err != nil || !slices.Equal(got, []float64{1, 2, 4.5}) {
		t.Fatalf("parseRates(\"1, 2,4.5\") = %v, %v; want [1 2 4.5]", got, err)
	}
	for _, bad := range []string{"", "0", "-1", "1,,2", "fast"} {
		if _, err := parseRates(bad); err == nil {
			t.Errorf("parseRates(%q) accepted, want an error", bad)
		}
	}
}
