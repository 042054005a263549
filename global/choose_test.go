package global

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestChooseWeighsTheMove: a follow-up whose prefix one cell holds stays
// there unless the load it would escape outweighs the prefill AND the
// copy (MoveWeight per block it lacks); with MoveWeight 0 the prefill
// alone is weighed, as before.
func TestChooseWeighsTheMove(t *testing.T) {
	const total = 640 // a follow-up of 40 ids of 16 blocks
	holder := func(load float64) ProbeAnswer { return ProbeAnswer{Cell: 0, Matched: 600, Load: load} }
	light := ProbeAnswer{Cell: 1, Matched: 0, Load: 0}
	for _, tc := range []struct {
		name   string
		move   float64
		holder float64 // the holder's pick load; the light cell's is 0
		want   int
	}{
		{"idle holder keeps it", 1, 0, 0},
		{"gap below the prefill keeps it", 1, 500, 0},
		{"gap above the prefill but below prefill and copy keeps it", 1, 900, 0},
		{"gap above prefill and copy moves it", 1, 1300, 1},
		{"without the move weight the prefill alone decides", 0, 900, 1},
		{"a heavier move weight keeps it longer", 3, 2300, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultChooseConfig()
			cfg.MoveWeight = tc.move
			got := Choose(cfg, []ProbeAnswer{holder(tc.holder), light}, total)
			if got[0] != tc.want {
				t.Fatalf("order %v with the holder at load %v, move weight %v: want cell %d first", got, tc.holder, tc.move, tc.want)
			}
		})
	}
}

// TestChooseColdPicksTheLightest: for a cold prompt (no answer matches
// anything) the move costs nothing and the lightest pick wins.
func TestChooseColdPicksTheLightest(t *testing.T) {
	answers := []ProbeAnswer{{Cell: 3, Load: 700}, {Cell: 5, Load: 20}, {Cell: 1, Load: 300}}
	if got, want := Choose(DefaultChooseConfig(), answers, 64), []int{5, 1, 3}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// refKey is the reference cost model of a choice, one cell at a time:
// failed probes last, then (with AvoidBusy) busy picks, then PrefillWeight*(total-matched)
// + MoveWeight*(deepest-matched) + load + RTT. deepest is the deepest
// match among the answers of the request: the copy a move makes.
func refKey(cfg ChooseConfig, a ProbeAnswer, total, deepest int) (rank int, cost float64) {
	switch {
	case a.Err != nil:
		return 2, 0
	case a.Busy && cfg.AvoidBusy:
		rank = 1
	}
	return rank, cfg.PrefillWeight*float64(total-a.Matched) + cfg.MoveWeight*float64(deepest-a.Matched) + a.Load +
		cfg.RTTWeight*float64(a.Distance.Milliseconds())
}

// TestChooseMoreProbesNeverChooseWorse: over random answer sets, Choose's
// first cell is the one of least reference cost (refKey, the move charged
// against the deepest answer of all probes), and adding probes to a
// request never makes it choose a cell of higher reference cost than it
// chose among fewer: the chosen cost is non-increasing as the probes grow
// from 1 to 8.
func TestChooseMoreProbesNeverChooseWorse(t *testing.T) {
	r := rand.New(rand.NewPCG(24, 1))
	for round := range 2000 {
		cfg := ChooseConfig{PrefillWeight: []float64{0.5, 1, 2}[r.IntN(3)], MoveWeight: []float64{0, 1, 2}[r.IntN(3)], AvoidBusy: r.IntN(2) == 0}
		total := 1 + r.IntN(200)
		all := make([]ProbeAnswer, 8)
		deepest := 0
		for i := range all {
			a := ProbeAnswer{Cell: i, Matched: r.IntN(total + 1), Load: float64(r.IntN(400)), Busy: r.IntN(6) == 0}
			if r.IntN(3) == 0 {
				a.Matched = 0
			}
			if r.IntN(10) == 0 {
				a.Err = errNoPick
			}
			if a.Err == nil {
				deepest = max(deepest, a.Matched)
			}
			all[i] = a
		}
		key := func(cell int) (int, float64) { return refKey(cfg, all[cell], total, deepest) }
		prevRank, prevCost := 3, 0.0
		for n := 1; n <= len(all); n++ {
			got := Choose(cfg, all[:n], total)[0]
			rank, cost := key(got)
			for _, a := range all[:n] {
				if rk, c := key(a.Cell); rk < rank || (rk == rank && rank < 2 && c < cost) {
					t.Fatalf("round %d, %d probes: chose cell %d (rank %d cost %v) over cell %d (rank %d cost %v)", round, n, got, rank, cost, a.Cell, rk, c)
				}
			}
			if rank > prevRank || (rank == prevRank && rank < 2 && cost > prevCost) {
				t.Fatalf("round %d: %d probes chose cell %d (rank %d cost %v), worse than %d probes (rank %d cost %v)",
					round, n, got, rank, cost, n-1, prevRank, prevCost)
			}
			prevRank, prevCost = rank, cost
		}
	}
}

// TestChooseWeighsThePressure: a cell whose pick holds a deeper prefix on a
// full cache loses a new prefix to a cell whose pick has room, once the
// blocks it would evict (Evicts, at PressureWeight) outweigh the prefix it
// saves; with weight 0 the deeper prefix wins, as before.
func TestChooseWeighsThePressure(t *testing.T) {
	const total = 200
	full := ProbeAnswer{Cell: 0, Matched: 32, Evicts: 168} // the system prompt on a full pod
	empty := ProbeAnswer{Cell: 1, Matched: 0}              // an empty pod elsewhere
	for _, tc := range []struct {
		name     string
		pressure float64
		want     int
	}{
		{"the full pod's evictions outweigh its prefix", 1, 1},
		{"without pressure the deeper prefix wins", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultChooseConfig()
			cfg.PressureWeight = tc.pressure
			if got := Choose(cfg, []ProbeAnswer{full, empty}, total); got[0] != tc.want {
				t.Fatalf("order %v at pressure weight %v: want cell %d first", got, tc.pressure, tc.want)
			}
		})
	}
}
