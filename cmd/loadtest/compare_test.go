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

// TestCheckRepeat checks --repeat: at least 1, and above 1 only with the
// --rate sweep it repeats.
func TestCheckRepeat(t *testing.T) {
	for _, tt := range []struct {
		repeat int
		rates  string
		ok     bool
	}{{1, "", true}, {1, "1,2", true}, {3, "1.5", true}, {3, "", false}, {0, "1", false}, {-2, "1", false}} {
		if err := checkRepeat(tt.repeat, tt.rates); (err == nil) != tt.ok {
			t.Errorf("checkRepeat(%d, %q) = %v, want ok %v", tt.repeat, tt.rates, err, tt.ok)
		}
	}
}
