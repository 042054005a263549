package events

import (
	"fmt"
	"testing"
)

func TestSeqTracker(t *testing.T) {
	apply := SeqDecision{Action: SeqApply}
	dup := SeqDecision{Action: SeqDuplicate}
	restart := SeqDecision{Action: SeqRestart}
	gap := func(from, to uint64, pending bool) SeqDecision {
		return SeqDecision{Action: SeqGap, From: from, To: to, Pending: pending}
	}
	repaired := SeqDecision{Action: SeqApply, Repaired: true}
	tests := []struct {
		name string
		seqs []uint64
		want []SeqDecision
		last uint64
	}{
		{"in order from 0", []uint64{0, 1, 2, 3}, []SeqDecision{apply, apply, apply, apply}, 3},
		{"late join takes baseline", []uint64{500, 501}, []SeqDecision{apply, apply}, 501},
		{"duplicate of last", []uint64{4, 5, 5}, []SeqDecision{apply, apply, dup}, 5},
		{"old replay", []uint64{4, 5, 6, 2, 3, 7}, []SeqDecision{apply, apply, apply, dup, dup, apply}, 7},
		{"gap then replay", []uint64{1, 2, 5, 3, 4, 5, 6},
			[]SeqDecision{apply, apply, gap(3, 4, false), apply, repaired, apply, apply}, 6},
		{"gap grows while pending", []uint64{1, 4, 7, 2, 3, 4, 5, 6},
			[]SeqDecision{apply, gap(2, 3, false), gap(2, 6, true), apply, apply, apply, apply, repaired}, 6},
		{"restart to 0", []uint64{7, 8, 0, 1}, []SeqDecision{apply, apply, restart, apply}, 1},
		{"restart ends a pending gap", []uint64{7, 9, 0, 1}, []SeqDecision{apply, gap(8, 8, false), restart, apply}, 1},
		{"0 after only 0 is a duplicate", []uint64{0, 0}, []SeqDecision{apply, dup}, 0},
		{"first is 0 then gap", []uint64{0, 2}, []SeqDecision{apply, gap(1, 1, false)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tr SeqTracker
			for i, s := range tc.seqs {
				if got := tr.Next(s); got != tc.want[i] {
					t.Fatalf("step %d (seq %d): got %+v, want %+v", i, s, got, tc.want[i])
				}
			}
			if got, ok := tr.Last(); !ok || got != tc.last {
				t.Errorf("got last %d (%t), want %d", got, ok, tc.last)
			}
		})
	}
}

func TestSeqTrackerDegradedAndReset(t *testing.T) {
	var tr SeqTracker
	if _, ok := tr.Last(); ok {
		t.Fatal("got a last seq on a new tracker, want none")
	}
	tr.Next(10)
	tr.Next(13)
	from, to, ok := tr.Degraded()
	if !ok || from != 11 || to != 12 {
		t.Fatalf("got degraded %d..%d %t, want 11..12 true", from, to, ok)
	}
	tr.Reset()
	if _, _, ok := tr.Degraded(); ok {
		t.Fatal("got degraded after Reset, want not")
	}
	if got := tr.Next(3); got.Action != SeqApply {
		t.Fatalf("got %v after Reset, want apply (a new baseline)", got.Action)
	}
}

func TestSeqActionString(t *testing.T) {
	for a, want := range map[SeqAction]string{SeqApply: "apply", SeqDuplicate: "duplicate", SeqGap: "gap", SeqRestart: "restart", 0: "unknown"} {
		if got := a.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if got := fmt.Sprint(ReasonUnknownParent); got != "unknown_parent" {
		t.Errorf("got %q, want unknown_parent", got)
	}
}
