//go:build !race

// The race detector makes sync.Pool drop items at random, so allocation
// counts are only meaningful without it.

package vllmwire

import (
	"testing"

	"github.com/cellrouter/cellrouter/cell/events"
)

// TestDecodeSteadyStateAllocs checks that decoding into a reused Batch
// allocates nothing once the Batch has grown to size, in both forms.
func TestDecodeSteadyStateAllocs(t *testing.T) {
	src := benchBatch(8, 16)
	for _, form := range []Form{FormArray, FormMap} {
		payload, err := EncodePayload(nil, src, form)
		if err != nil {
			t.Fatal(err)
		}
		frames := [][]byte{[]byte(Topic("pod", "model")), EncodeSeq(1), payload}
		var dst events.Batch
		allocs := testing.AllocsPerRun(100, func() {
			if err := DecodeMessage(frames, &dst, Limits{}); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("form %d: got %.1f allocs per decode, want 0", form, allocs)
		}
	}
}
