package indexbench

import "testing"

func TestFindThreshold(t *testing.T) {
	tests := []struct {
		name   string
		points []Point
		want   Threshold
	}{
		{name: "no points", points: nil, want: Threshold{Index: -1}},
		{
			name:   "nothing passes",
			points: []Point{{Offered: 10, Achieved: 5, Backlog: 0.5}, {Offered: 5, Achieved: 4, Backlog: 0.2}},
			want:   Threshold{Index: -1},
		},
		{
			name:   "sweep down, last passes",
			points: []Point{{Offered: 10, Achieved: 6, Backlog: 0.4}, {Offered: 7, Achieved: 6.9, Backlog: 0.01}},
			want:   Threshold{Index: 1, Found: true, Valid: true},
		},
		{
			name:   "exactly 95 percent passes",
			points: []Point{{Offered: 10, Achieved: 8}, {Offered: 8, Achieved: 7.6, Backlog: 0.05}},
			want:   Threshold{Index: 1, Found: true, Valid: true},
		},
		{
			name:   "just under 95 percent fails",
			points: []Point{{Offered: 8, Achieved: 7.59, Backlog: 0.05}},
			want:   Threshold{Index: -1},
		},
		{
			name:   "passing but backlogged is invalid",
			points: []Point{{Offered: 10, Achieved: 3}, {Offered: 7, Achieved: 6.9, Backlog: 0.08}},
			want:   Threshold{Index: 1, Found: true, Valid: false},
		},
		{
			name:   "highest passing wins, in any order",
			points: []Point{{Offered: 4, Achieved: 4}, {Offered: 9, Achieved: 2}, {Offered: 6, Achieved: 6}, {Offered: 8, Achieved: 5}},
			want:   Threshold{Index: 2, Found: true, Valid: true},
		},
		{
			name:   "first step passes: lower bound",
			points: []Point{{Offered: 10, Achieved: 10}},
			want:   Threshold{Index: 0, Found: true, Valid: true, LowerBound: true},
		},
		{
			name:   "failures only below: lower bound",
			points: []Point{{Offered: 10, Achieved: 10}, {Offered: 5, Achieved: 1}},
			want:   Threshold{Index: 0, Found: true, Valid: true, LowerBound: true},
		},
		{
			name:   "zero offered never passes",
			points: []Point{{Offered: 0, Achieved: 0}},
			want:   Threshold{Index: -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := FindThreshold(tt.points, 0.95, 0.05); got != tt.want {
				t.Errorf("FindThreshold got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPercentile(t *testing.T) {
	tests := []struct {
		name    string
		samples []int64
		q       float64
		want    int64
	}{
		{"empty", nil, 0.5, 0},
		{"one", []int64{7}, 0.99, 7},
		{"median odd", []int64{5, 1, 3}, 0.5, 3},
		{"median even", []int64{4, 1, 3, 2}, 0.5, 2},
		{"p99 of 100", seq(100), 0.99, 99},
		{"p99 of 1000", seq(1000), 0.99, 990},
		{"max", seq(10), 1, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.samples, tt.q); got != tt.want {
				t.Errorf("Percentile(q=%v) got %d, want %d", tt.q, got, tt.want)
			}
		})
	}
}

// seq returns n, n-1, ..., 1.
func seq(n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(n - i)
	}
	return out
}
