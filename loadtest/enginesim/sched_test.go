package enginesim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestSchedulerMatchesReference drives the scheduler with random acquires,
// releases and cancellations and checks it against a naive model: a
// counter and a FIFO slice of waiter ids.
func TestSchedulerMatchesReference(t *testing.T) {
	const max = 3
	s := newScheduler(max, 0)
	rng := rand.New(rand.NewPCG(7, 8))
	type result struct {
		id  int
		err error
	}
	results := make(chan result, 64)
	expect := func(want result) {
		t.Helper()
		select {
		case got := <-results:
			if got.id != want.id || (got.err == nil) != (want.err == nil) {
				t.Fatalf("got acquire result %+v, want %+v", got, want)
			}
		case <-time.After(waitTimeout):
			t.Fatalf("no acquire result, want %+v", want)
		}
	}
	running, queue := 0, []int(nil)
	var holders []int
	cancels := map[int]context.CancelFunc{}
	check := func(op string) {
		t.Helper()
		waitFor(t, func() string {
			r, w := s.counts()
			return fmt.Sprintf("after %s: got running %d waiting %d, want %d %d", op, r, w, running, len(queue))
		}, func() bool {
			r, w := s.counts()
			return r == running && w == len(queue)
		})
	}
	for id := 0; id < 400; id++ {
		switch op := rng.IntN(3); {
		case op == 0 || len(holders) == 0 && len(queue) == 0:
			ctx, cancel := context.WithCancel(context.Background())
			cancels[id] = cancel
			go func() { results <- result{id, s.acquire(ctx, 1)} }()
			if running < max && len(queue) == 0 {
				running++
				holders = append(holders, id)
				expect(result{id: id})
			} else {
				queue = append(queue, id)
			}
			check(fmt.Sprintf("acquire %d", id))
		case op == 1 && len(holders) > 0:
			i := rng.IntN(len(holders))
			holders = slices.Delete(holders, i, i+1)
			s.release(1)
			if len(queue) > 0 {
				next := queue[0]
				queue = queue[1:]
				holders = append(holders, next)
				expect(result{id: next})
			} else {
				running--
			}
			check("release")
		case len(queue) > 0:
			i := rng.IntN(len(queue))
			w := queue[i]
			queue = slices.Delete(queue, i, i+1)
			cancels[w]()
			expect(result{id: w, err: context.Canceled})
			check(fmt.Sprintf("cancel %d", w))
		}
	}
	for _, c := range cancels {
		c()
	}
}

// TestSchedulerKVAgainstReference drives a scheduler with a KV limit with
// random acquires of random sizes, releases and cancellations, against a
// naive model: the running requests' sizes and a FIFO of waiters, whose
// head runs when a slot is free and its blocks fit (or nothing runs).
func TestSchedulerKVAgainstReference(t *testing.T) {
	const max, capacity = 3, 100
	s := newScheduler(max, capacity)
	rng := rand.New(rand.NewPCG(9, 10))
	type result struct {
		id  int
		err error
	}
	results := make(chan result, 64)
	need := map[int]int{}
	var running, queue []int // ids
	cancels := map[int]context.CancelFunc{}
	held := func() int {
		n := 0
		for _, id := range running {
			n += need[id]
		}
		return n
	}
	fits := func(id int) bool {
		return len(running) < max && (len(running) == 0 || held()+need[id] <= capacity)
	}
	// admitted collects the ids the model admits from the queue's head.
	admitted := func() []int {
		var out []int
		for len(queue) > 0 && fits(queue[0]) {
			running = append(running, queue[0])
			out = append(out, queue[0])
			queue = queue[1:]
		}
		return out
	}
	// expectErrs takes one result for each id of want, in any order: the
	// waiters' goroutines send them, so a cancelled waiter's error and the
	// admissions its leaving allows race each other. want maps an id to
	// whether its result is an error.
	expectErrs := func(want map[int]bool) {
		t.Helper()
		for n := len(want); n > 0; n-- {
			select {
			case got := <-results:
				wantErr, ok := want[got.id]
				if !ok || (got.err != nil) != wantErr {
					t.Fatalf("acquire result %+v, want one of %v (id: error)", got, want)
				}
				delete(want, got.id)
			case <-time.After(waitTimeout):
				t.Fatalf("no acquire result, want %v", want)
			}
		}
	}
	expect := func(ids []int, err bool) {
		t.Helper()
		want := map[int]bool{}
		for _, id := range ids {
			want[id] = err
		}
		expectErrs(want)
	}
	check := func(op string) {
		t.Helper()
		waitFor(t, func() string {
			r, w := s.counts()
			return fmt.Sprintf("after %s: got running %d waiting %d, want %d %d", op, r, w, len(running), len(queue))
		}, func() bool {
			r, w := s.counts()
			return r == len(running) && w == len(queue)
		})
		select {
		case got := <-results:
			t.Fatalf("after %s: unexpected acquire result %+v", op, got)
		default:
		}
	}
	for id := 0; id < 500; id++ {
		switch op := rng.IntN(3); {
		case op == 0 || len(running) == 0 && len(queue) == 0:
			need[id] = 1 + rng.IntN(70)
			ctx, cancel := context.WithCancel(context.Background())
			cancels[id] = cancel
			go func(id, n int) { results <- result{id, s.acquire(ctx, n)} }(id, need[id])
			if len(queue) == 0 && fits(id) {
				running = append(running, id)
				expect([]int{id}, false)
			} else {
				queue = append(queue, id)
			}
			check(fmt.Sprintf("acquire %d (%d blocks)", id, need[id]))
		case op == 1 && len(running) > 0:
			i := rng.IntN(len(running))
			done := running[i]
			running = slices.Delete(running, i, i+1)
			s.release(need[done])
			expect(admitted(), false)
			check(fmt.Sprintf("release %d", done))
		case len(queue) > 0:
			i := rng.IntN(len(queue))
			w := queue[i]
			queue = slices.Delete(queue, i, i+1)
			cancels[w]()
			want := map[int]bool{w: true}
			for _, id := range admitted() {
				want[id] = false
			}
			expectErrs(want)
			check(fmt.Sprintf("cancel %d", w))
		}
	}
	for _, c := range cancels {
		c()
	}
}
