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
	s := newScheduler(max)
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
			go func() { results <- result{id, s.acquire(ctx)} }()
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
			s.release()
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
