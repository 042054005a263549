package global

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestCellStats(t *testing.T) {
	s := newCellStats()
	s.probed("a", 2*time.Millisecond, nil)
	s.probed("a", 4*time.Millisecond, nil)
	s.probed("a", 0, errors.New("timeout"))
	s.probed("b", time.Millisecond, nil)
	s.served("a", "llama", true, 100, 64, 48)
	s.served("a", "llama", false, 0, 0, 0)
	for i := range maxModelsSeen + 4 {
		s.served("c", fmt.Sprintf("m%d", i), false, 0, 0, 0)
	}
	got := s.snapshot(map[string]bool{"a": true, "c": true})
	a := got["a"]
	if a.Probes != 3 || a.ProbeErrors != 1 || a.MeanRTT() != 3*time.Millisecond || a.LastRTT != 4*time.Millisecond {
		t.Errorf("a's probes = %+v (mean %v), want 3 with 1 error, mean 3ms, last 4ms", a, a.MeanRTT())
	}
	if a.Handoffs != 2 || a.PromptTokens != 100 || a.PredictedTokens != 64 || a.RealisedTokens != 48 || len(a.Models) != 1 {
		t.Errorf("a's hand-offs = %+v, want 2 hand-offs, 100/64/48 tokens, one model", a)
	}
	if n := len(got["c"].Models); n != maxModelsSeen {
		t.Errorf("c keeps %d model names, want the bound %d", n, maxModelsSeen)
	}
	if _, ok := got["b"]; ok {
		t.Error("b, not kept, is in the snapshot")
	}
	if again := s.snapshot(map[string]bool{"a": true, "b": true, "c": true}); len(again) != 2 {
		t.Errorf("b was not forgotten: %v", again)
	}
	var none cellCounters
	if none.MeanRTT() != 0 {
		t.Error("no answered probe, yet a mean round trip")
	}
}
