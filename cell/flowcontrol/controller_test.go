package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// fakePods is a Saturation of pods with a fixed number of slots each:
// the test takes a slot when it starts a request and gives it back when
// the request ends.
type fakePods struct {
	mu    sync.Mutex
	slots int
	busy  map[string]int
}

func newFakePods(slots int) *fakePods { return &fakePods{slots: slots, busy: map[string]int{}} }

func (f *fakePods) Saturated(pod string, reserve float64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busy[pod] >= ReservedLimit(f.slots, reserve)
}

func (f *fakePods) add(pod string, d int) {
	f.mu.Lock()
	f.busy[pod] += d
	f.mu.Unlock()
}

// eventually polls cond until it holds or a generous deadline passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// start returns a controller whose Run goroutine the test's cleanup
// stops and waits for.
func start(t *testing.T, cfg Config, sat Saturation) *Controller {
	c := New(cfg, sat, nil)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { stop(); <-done })
	return c
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.RecheckInterval = time.Millisecond
	return cfg
}

// admitAsync runs Admit in a goroutine and returns where its answer
// arrives.
func admitAsync(ctx context.Context, c *Controller, r Request) <-chan admitResult {
	ch := make(chan admitResult, 1)
	go func() {
		g, err := c.Admit(ctx, r)
		ch <- admitResult{g, err}
	}()
	return ch
}

type admitResult struct {
	g   *Grant
	err error
}

func TestDeadlineAnswers429(t *testing.T) {
	pods := newFakePods(1)
	pods.add("p", 1) // saturated for the whole test
	c := New(testConfig(), pods, nil)
	start := time.Now()
	_, err := c.Admit(context.Background(), Request{Tenant: "t", MaxWait: 50 * time.Millisecond, Tokens: 10, Pods: []string{"p"}})
	var fe *Error
	if !errors.Is(err, ErrDeadline) || !errors.As(err, &fe) {
		t.Fatalf("got %v, want ErrDeadline", err)
	}
	if fe.Waited < 50*time.Millisecond || time.Since(start) < 50*time.Millisecond || fe.RetryAfter < time.Second {
		t.Errorf("waited %v (%v by the clock), retry after %v: want at least the tenant's 50ms and a second", fe.Waited, time.Since(start), fe.RetryAfter)
	}
	// The client's own timeout is shorter still.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Admit(ctx, Request{Tenant: "t", MaxWait: time.Hour, Pods: []string{"p"}}); !errors.Is(err, ErrDeadline) {
		t.Errorf("client timeout: got %v, want ErrDeadline", err)
	}
	if _, err := c.Admit(context.Background(), Request{Tenant: "t", ClientTimeout: 10 * time.Millisecond, Pods: []string{"p"}}); !errors.Is(err, ErrDeadline) {
		t.Errorf("client's timeout header: got %v, want ErrDeadline", err)
	}
	if s := c.Stats(); s.Left[auth.PriorityStandard.Index()][OutcomeDeadline] != 1 || s.Left[auth.PriorityStandard.Index()][OutcomeClientDeadline] != 2 || s.Queued != [3]int{} {
		t.Errorf("stats %+v: want one deadline of the tenant's, two of the client's, nothing queued", s)
	}
}

func TestDisconnectLeavesAtOnce(t *testing.T) {
	pods := newFakePods(1)
	pods.add("p", 1)
	c := start(t, testConfig(), pods)
	ctx, cancel := context.WithCancel(context.Background())
	res := admitAsync(ctx, c, Request{Tenant: "t", Pods: []string{"p"}})
	eventually(t, "the request to queue", func() bool { return c.Stats().Queued[auth.PriorityStandard.Index()] == 1 })
	cancel()
	r := <-res
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("got %v, want the context's error", r.err)
	}
	if s := c.Stats(); s.Queued[auth.PriorityStandard.Index()] != 0 || s.Left[auth.PriorityStandard.Index()][OutcomeCancelled] != 1 {
		t.Errorf("stats %+v: want the request gone, counted cancelled", s)
	}
}

func TestShedLowestBandFirst(t *testing.T) {
	pods := newFakePods(1)
	pods.add("p", 1)
	cfg := testConfig()
	cfg.MaxQueued = 2
	c := start(t, cfg, pods)
	ctx := context.Background()
	req := func(ten string, b auth.Priority) Request { return Request{Tenant: ten, Band: b, Pods: []string{"p"}} }
	shed1 := admitAsync(ctx, c, req("batch", auth.PrioritySheddable))
	eventually(t, "one queued", func() bool { return c.Stats().Queued[0] == 1 })
	std := admitAsync(ctx, c, req("web", auth.PriorityStandard))
	eventually(t, "two queued", func() bool { return c.Stats().Queued[1] == 1 })
	crit := admitAsync(ctx, c, req("gold", auth.PriorityCritical))
	if r := <-shed1; !errors.Is(r.err, ErrShed) {
		t.Fatalf("sheddable: got %v, want ErrShed", r.err)
	}
	// Full of standard and critical: a sheddable arrival is refused at the
	// door, a standard one too (nothing below it to shed).
	if _, err := c.Admit(ctx, req("batch", auth.PrioritySheddable)); !errors.Is(err, ErrShed) {
		t.Fatalf("sheddable into a full queue: got %v, want ErrShed", err)
	}
	if _, err := c.Admit(ctx, req("web", auth.PriorityStandard)); !errors.Is(err, ErrShed) {
		t.Fatalf("standard into a queue of standard and critical: got %v, want ErrShed", err)
	}
	// Room again: critical leaves first.
	pods.add("p", -1)
	r := <-crit
	if r.err != nil || !r.g.Queued() {
		t.Fatalf("critical: got %v, want a grant after waiting", r.err)
	}
	pods.add("p", 1)
	r.g.Done(5)
	pods.add("p", -1)
	if r := <-std; r.err != nil {
		t.Fatalf("standard: got %v", r.err)
	} else {
		r.g.Done(-1)
	}
	s := c.Stats()
	if s.CriticalShedWhileSheddableQueued != 0 || s.Left[0][OutcomeShed] != 1 || s.Left[0][OutcomeRefused] != 1 || s.Left[1][OutcomeRefused] != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestDeadlineShedsLowerBands checks that a request the cell could not
// serve within its deadline takes the lower bands' waiting requests with
// it (they would have been served after it), so it is never refused while
// one of them waits; a client's own shorter bound sheds nobody.
func TestDeadlineShedsLowerBands(t *testing.T) {
	pods := newFakePods(1)
	pods.add("p", 1)
	c := start(t, testConfig(), pods)
	ctx := context.Background()
	batch := admitAsync(ctx, c, Request{Tenant: "batch", Band: auth.PrioritySheddable, Pods: []string{"p"}})
	eventually(t, "the sheddable request to queue", func() bool { return c.Stats().Queued[0] == 1 })
	// The client's own bound passes: the sheddable request stays.
	if _, err := c.Admit(ctx, Request{Tenant: "gold", Band: auth.PriorityCritical, ClientTimeout: 10 * time.Millisecond, Pods: []string{"p"}}); !errors.Is(err, ErrDeadline) {
		t.Fatalf("critical with a client bound: got %v, want ErrDeadline", err)
	}
	if s := c.Stats(); s.Queued[0] != 1 || s.CriticalShedWhileSheddableQueued != 0 {
		t.Fatalf("after a client's bound: %+v, want the sheddable request still queued", s)
	}
	// The tenant's bound passes: the sheddable request goes first.
	if _, err := c.Admit(ctx, Request{Tenant: "gold", Band: auth.PriorityCritical, MaxWait: 10 * time.Millisecond, Pods: []string{"p"}}); !errors.Is(err, ErrDeadline) {
		t.Fatalf("critical with a tenant bound: got %v, want ErrDeadline", err)
	}
	if r := <-batch; !errors.Is(r.err, ErrShed) {
		t.Fatalf("sheddable: got %v, want ErrShed", r.err)
	}
	s := c.Stats()
	if s.CriticalShedWhileSheddableQueued != 0 || s.Left[2][OutcomeDeadline] != 1 || s.Left[2][OutcomeClientDeadline] != 1 || s.Left[0][OutcomeShed] != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestControllerRandom runs many goroutines of random tenants, bands,
// deadlines and cancellations against pods with a few slots each, and
// checks that every request gets exactly one answer, that the counts
// agree, that no critical request is refused while a sheddable one waits,
// and that the queue ends empty with nothing pending.
func TestControllerRandom(t *testing.T) {
	pods := newFakePods(2)
	cfg := testConfig()
	cfg.MaxQueued = 150
	c := New(cfg, pods, nil)
	ctx, stop := context.WithCancel(context.Background())
	var runWG sync.WaitGroup
	runWG.Add(1)
	go func() { defer runWG.Done(); c.Run(ctx) }()

	const n = 600
	var granted, deadline, shed, cancelled atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			first := rng.IntN(3)
			ps := []string{fmt.Sprintf("p%d", first)}
			if rng.IntN(2) == 0 {
				ps = append(ps, fmt.Sprintf("p%d", (first+1)%3))
			}
			r := Request{Tenant: fmt.Sprintf("t%d", rng.IntN(5)), Band: auth.Priorities()[rng.IntN(3)], Weight: float64(1 + rng.IntN(3)),
				MaxWait: time.Duration(5+rng.IntN(200)) * time.Millisecond, Tokens: 1 + rng.IntN(100), Pods: ps}
			rctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if rng.IntN(6) == 0 {
				after := time.Duration(rng.IntN(20)) * time.Millisecond
				go func() { time.Sleep(after); cancel() }() // the client gives up
			}
			g, err := c.Admit(rctx, r)
			switch {
			case err == nil:
				granted.Add(1)
				pod := ps[0]
				if i := g.Place(ps, nil); i > 0 {
					pod = ps[i]
				}
				pods.add(pod, 1)
				g.Started()
				time.Sleep(time.Duration(rng.IntN(3)) * time.Millisecond) // the request's work
				pods.add(pod, -1)
				g.Done(r.Tokens)
				g.Done(r.Tokens) // a second Done does nothing
			case errors.Is(err, ErrDeadline):
				deadline.Add(1)
			case errors.Is(err, ErrShed):
				shed.Add(1)
			case errors.Is(err, context.Canceled):
				cancelled.Add(1)
			default:
				t.Errorf("unexpected error %v", err)
			}
		}()
	}
	wg.Wait()
	if got := granted.Load() + deadline.Load() + shed.Load() + cancelled.Load(); got != n {
		t.Fatalf("%d answers for %d requests", got, n)
	}
	s := c.Stats()
	var admitted, dispatched, dl, sh, ca int
	for b := range auth.NumPriorities {
		admitted += s.Admitted[b]
		dispatched += s.Left[b][OutcomeDispatched]
		dl += s.Left[b][OutcomeDeadline] + s.Left[b][OutcomeClientDeadline]
		sh += s.Left[b][OutcomeShed] + s.Left[b][OutcomeRefused]
		ca += s.Left[b][OutcomeCancelled]
	}
	// A request dispatched just as its client left counts as dispatched
	// and answers cancelled.
	if admitted+dispatched < int(granted.Load()) || admitted+dispatched > int(granted.Load()+cancelled.Load()) ||
		dl != int(deadline.Load()) || sh != int(shed.Load()) || ca > int(cancelled.Load()) {
		t.Errorf("stats %+v disagree with answers: granted %d deadline %d shed %d cancelled %d", s, granted.Load(), deadline.Load(), shed.Load(), cancelled.Load())
	}
	if s.CriticalShedWhileSheddableQueued != 0 {
		t.Errorf("%d critical requests refused while sheddable ones waited", s.CriticalShedWhileSheddableQueued)
	}
	c.mu.Lock()
	if c.q.Len() != 0 || c.pending != 0 {
		t.Errorf("queue %d, pending %d at the end: want 0, 0", c.q.Len(), c.pending)
	}
	for b := range c.loads {
		if c.loads[b].inflight != 0 {
			t.Errorf("band %d: %d in flight at the end, want 0", b, c.loads[b].inflight)
		}
		for name, tl := range c.loads[b].tenants {
			if tl.inflight != 0 {
				t.Errorf("band %d tenant %s: %d in flight at the end, want 0", b, name, tl.inflight)
			}
		}
	}
	c.mu.Unlock()
	stop()
	runWG.Wait()
	if _, err := c.Admit(context.Background(), Request{}); !errors.Is(err, ErrClosed) {
		t.Errorf("after Run returned: got %v, want ErrClosed", err)
	}
	t.Logf("granted %d, deadline %d, shed %d, cancelled %d", granted.Load(), deadline.Load(), shed.Load(), cancelled.Load())
}
