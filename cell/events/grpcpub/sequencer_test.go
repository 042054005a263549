package grpcpub

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestDecide(t *testing.T) {
	next := func(acked uint64) SeqVerdict { return SeqVerdict{Action: SeqNext, Acked: acked, HasAcked: true} }
	restart := SeqVerdict{Action: SeqNext, ClearFirst: true}
	tests := []struct {
		name  string
		st    seqState
		seen  bool
		epoch uint64
		id    uint64
		want  SeqVerdict
	}{
		{"first seen at 0", seqState{}, false, 0, 0, SeqVerdict{Action: SeqNext}},
		{"first seen at 9", seqState{}, false, 5, 9, SeqVerdict{Action: SeqNext}},
		{"next", seqState{last: 4}, true, 0, 5, next(4)},
		{"next after 0", seqState{last: 0}, true, 0, 1, next(0)},
		{"duplicate", seqState{last: 4}, true, 0, 3, SeqVerdict{Action: SeqDuplicate, Acked: 4, HasAcked: true}},
		{"same id again", seqState{last: 4}, true, 0, 4, SeqVerdict{Action: SeqDuplicate, Acked: 4, HasAcked: true}},
		{"zero after zero", seqState{last: 0}, true, 0, 0, SeqVerdict{Action: SeqDuplicate, Acked: 0, HasAcked: true}},
		{"gap", seqState{last: 4}, true, 0, 7, SeqVerdict{Action: SeqGap, ResendFrom: 5, Acked: 4, HasAcked: true}},
		{"restart", seqState{last: 4}, true, 0, 0, restart},
		{"restart, epoch newly sent", seqState{last: 4}, true, 3, 0, restart},
		{"restart, epoch no longer sent", seqState{epoch: 3, last: 4}, true, 0, 0, restart},
		{"same epoch zero is duplicate", seqState{epoch: 3, last: 4}, true, 3, 0, SeqVerdict{Action: SeqDuplicate, Acked: 4, HasAcked: true}},
		{"new epoch at 0", seqState{epoch: 3, last: 4}, true, 4, 0, restart},
		{"new epoch past 0", seqState{epoch: 3, last: 4}, true, 4, 5, SeqVerdict{Action: SeqGap, ResendFrom: 0}},
		{"new epoch at old next", seqState{epoch: 3, last: 4}, true, 4, 1, SeqVerdict{Action: SeqGap, ResendFrom: 0}},
		{"wrap within a run", seqState{epoch: 3, last: math.MaxUint64}, true, 3, 0, next(math.MaxUint64)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decide(tt.st, tt.seen, tt.epoch, tt.id); got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestSequencerDeliversExactlyOnce checks MemSequencer against the naive
// reference of what a cell must see: a publisher that sends runs of batches
// over a channel that loses, duplicates and replays requests, and that
// obeys every resend_from, gets every batch of every run applied exactly
// once, in order, with a clear before each run after the first. (The very
// first request the cell sees is its baseline, so the channel delivers it.)
func TestSequencerDeliversExactlyOnce(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		seq := NewMemSequencer()
		runs := 1 + rng.IntN(3)
		var got, want []string // "clear" and "r<run>:<id>"
		for run := range runs {
			epoch := uint64(100 + run)
			n := uint64(1 + rng.IntN(40))
			if run > 0 {
				want = append(want, "clear")
			}
			for id := range n {
				want = append(want, label(run, id))
			}
			var next, acked uint64
			hasAcked := false
			deliver := func(id uint64) {
				v := seq.Check("p", epoch, id)
				if v.HasAcked != hasAcked || (hasAcked && v.Acked != acked) {
					t.Fatalf("seed %d run %d event_id %d: got acked %d %t, want %d %t", seed, run, id, v.Acked, v.HasAcked, acked, hasAcked)
				}
				if v.Action == SeqGap {
					wantFrom := uint64(0)
					if hasAcked {
						wantFrom = acked + 1
					}
					if v.ResendFrom != wantFrom {
						t.Fatalf("seed %d run %d event_id %d: got resend_from %d, want %d", seed, run, id, v.ResendFrom, wantFrom)
					}
				}
				switch v.Action {
				case SeqNext:
					if v.ClearFirst {
						got = append(got, "clear")
					}
					got = append(got, label(run, id))
					seq.Commit("p", epoch, id)
					acked, hasAcked = id, true
				case SeqGap:
					next = v.ResendFrom
				case SeqDuplicate:
				}
			}
			for steps := 0; next < n && steps < 10000; steps++ {
				r := rng.IntN(10)
				if run == 0 && !hasAcked {
					r = 9
				}
				switch {
				case r < 2: // lost on the way
					next++
				case r < 3 && next > 0: // an old batch replayed
					deliver(uint64(rng.IntN(int(next))))
				default:
					id := next
					next++
					deliver(id)
				}
				if next >= n && (!hasAcked || acked < n-1) {
					// The publisher's tail was lost: it resumes after its
					// last acknowledgement, as after a reconnect.
					next = 0
					if hasAcked {
						next = acked + 1
					}
				}
			}
			if !hasAcked || acked != n-1 {
				t.Fatalf("seed %d run %d: publisher never got event_id %d acknowledged (acked %d, %t)", seed, run, n-1, acked, hasAcked)
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("seed %d: got applied %v, want %v", seed, got, want)
		}
	}
}

// label names batch id of run.
func label(run int, id uint64) string { return fmt.Sprintf("r%d:%d", run, id) }

func TestMemSequencerLast(t *testing.T) {
	m := NewMemSequencer()
	if _, ok := m.Last("p"); ok {
		t.Fatal("got a last id for an unseen publisher, want none")
	}
	m.Commit("p", 0, 3)
	if got, ok := m.Last("p"); !ok || got != 3 {
		t.Errorf("got last %d %t, want 3 true", got, ok)
	}
}
