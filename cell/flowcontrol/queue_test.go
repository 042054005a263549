package flowcontrol

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// TestQueueFairnessBound keeps three tenants of different weights
// backlogged with random request sizes and checks the VTC bound: at every
// dispatch, any two tenants' served tokens over their weights differ by
// at most the largest request over the smallest weight, so the served
// shares converge to the weights.
func TestQueueFairnessBound(t *testing.T) {
	const maxCost = 400.0
	weights := map[string]float64{"light": 1, "mid": 2, "heavy": 4}
	rng := rand.New(rand.NewPCG(3, 9))
	q := NewQueue()
	served := map[string]float64{}
	push := func(ten string) {
		q.Push(&Item{Tenant: ten, Band: auth.PriorityStandard, Weight: weights[ten], Cost: float64(1 + rng.IntN(int(maxCost)))})
	}
	for ten := range weights {
		for range 3 {
			push(ten)
		}
	}
	bound := maxCost / 1 // the largest cost over the smallest weight
	for step := 0; step < 20000; step++ {
		it := q.Next(nil)
		served[it.Tenant] += it.Cost
		push(it.Tenant) // every tenant stays backlogged
		for a, wa := range weights {
			for b, wb := range weights {
				if d := served[a]/wa - served[b]/wb; d > bound+1e-9 {
					t.Fatalf("step %d: %s served %v/%v, %s %v/%v: normalised gap %v over the bound %v", step, a, served[a], wa, b, served[b], wb, d, bound)
				}
			}
		}
	}
	total := served["light"] + served["mid"] + served["heavy"]
	for ten, w := range weights {
		if share, want := served[ten]/total, w/7; math.Abs(share-want) > 0.01 {
			t.Errorf("%s: share %.4f, want %.4f (its weight's)", ten, share, want)
		}
	}
}

// TestQueueStrictPriority checks that no item of a lower band leaves
// while an eligible item of a higher band waits, whatever the counters.
func TestQueueStrictPriority(t *testing.T) {
	q := NewQueue()
	q.Charge("gold", auth.PriorityCritical, 1, 1e9) // far behind on tokens
	q.Push(&Item{Tenant: "batch", Band: auth.PrioritySheddable, Cost: 1})
	q.Push(&Item{Tenant: "web", Band: auth.PriorityStandard, Cost: 1})
	q.Push(&Item{Tenant: "gold", Band: auth.PriorityCritical, Cost: 1})
	var got []auth.Priority
	for it := q.Next(nil); it != nil; it = q.Next(nil) {
		got = append(got, it.Band)
	}
	want := []auth.Priority{auth.PriorityCritical, auth.PriorityStandard, auth.PrioritySheddable}
	if len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("order: got %v, want %v", got, want)
	}
}

// TestQueueHotPrefixDoesNotSkip checks that a request whose pod is free
// (a hot prefix on an idle pod) still leaves in fair order: eligibility
// only passes over heads whose pods are all saturated, and a tenant ahead
// on tokens waits behind one that is not, whatever pods they want.
func TestQueueHotPrefixDoesNotSkip(t *testing.T) {
	q := NewQueue()
	// Both tenants wait; the noisy one is served a large request first.
	q.Push(&Item{Tenant: "noisy", Band: auth.PriorityStandard, Cost: 5000, Value: "big"})
	quiet := &Item{Tenant: "quiet", Band: auth.PriorityStandard, Cost: 10, Value: "cold-pod"}
	q.Push(quiet)
	if it := q.Next(nil); it.Value != "big" {
		t.Fatalf("first out: got %v, want the earliest head on equal counters", it.Value)
	}
	// The noisy tenant's next request hits a hot prefix on an idle pod;
	// it still waits behind the quiet one, whose counter is lower.
	hot := &Item{Tenant: "noisy", Band: auth.PriorityStandard, Cost: 10, Value: "hot-pod"}
	q.Push(hot)
	if it := q.Next(nil); it != quiet {
		t.Fatalf("second out: got %v, want the quiet tenant's request", it.Value)
	}
	// A tenant that was idle is lifted on arrival: it is not owed the
	// tokens others were served while it was away.
	late := &Item{Tenant: "late", Band: auth.PriorityStandard, Cost: 10}
	q.Push(late)
	if c, want := q.Counter("late", auth.PriorityStandard), q.Counter("noisy", auth.PriorityStandard); c != want {
		t.Errorf("late's counter %v: want lifted to the least waiting counter, %v", c, want)
	}
	// Eligibility passes over a head whose pods are all saturated, never
	// over one that could go.
	if it := q.Next(func(it *Item) bool { return it.Value != "hot-pod" }); it != late {
		t.Fatalf("with the hot pod saturated: got %v, want late's request", it)
	}
	if it := q.Next(nil); it != hot {
		t.Fatalf("last out: got %v, want the hot request", it)
	}
}
