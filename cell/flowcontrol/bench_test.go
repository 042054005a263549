package flowcontrol

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// BenchmarkQueuePushNext measures one enqueue and one dequeue with
// tenants backlogged in one band (the scan over active tenants is the
// cost that grows).
func BenchmarkQueuePushNext(b *testing.B) {
	for _, tenants := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("tenants=%d", tenants), func(b *testing.B) {
			q := NewQueue()
			names := make([]string, tenants)
			items := make([]Item, 4*tenants)
			for i := range names {
				names[i] = fmt.Sprintf("t%d", i)
			}
			for i := range items {
				items[i] = Item{Tenant: names[i%tenants], Band: auth.PriorityStandard, Weight: 1, Cost: float64(1 + i%97)}
				q.Push(&items[i])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				it := q.Next(nil)
				q.Push(it)
			}
		})
	}
}

// BenchmarkControllerAdmit measures the uncontended fast path: a request
// admitted at once and ended.
func BenchmarkControllerAdmit(b *testing.B) {
	c := New(DefaultConfig(), newFakePods(1<<30), nil)
	r := Request{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Tokens: 100, Pods: []string{"p0", "p1"}}
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		g, err := c.Admit(ctx, r)
		if err != nil {
			b.Fatal(err)
		}
		g.Done(120)
	}
}

// BenchmarkControllerQueued measures a request that waits and is
// dispatched: queue, grant, start, end, with a second request holding
// the pod's only slot meanwhile.
func BenchmarkControllerQueued(b *testing.B) {
	pods := newFakePods(1)
	c := New(DefaultConfig(), pods, nil)
	r := Request{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Tokens: 100, Pods: []string{"p"}}
	ctx := context.Background()
	b.ReportAllocs()
	for range b.N {
		pods.add("p", 1)
		res := make(chan *Grant)
		go func() {
			g, err := c.Admit(ctx, r)
			if err != nil {
				panic(err)
			}
			res <- g
		}()
		for c.queued() == 0 {
			runtime.Gosched()
		}
		pods.add("p", -1)
		c.mu.Lock()
		c.dispatchLocked()
		c.mu.Unlock()
		g := <-res
		g.Done(100)
	}
}

func (c *Controller) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.q.Len()
}

// BenchmarkDispatchAffinity measures one dispatch from a backlog of one
// tenant under the queue's cache affinity, at its worst: every waiting
// request's pods are saturated but the last, which costs each a detour,
// so the look goes through the whole lookahead and every pod of each
// request. lookahead=1 is first come, first served, for comparison.
func BenchmarkDispatchAffinity(b *testing.B) {
	for _, npods := range []int{8, 256} {
		for _, look := range []int{1, 32} {
			b.Run(fmt.Sprintf("pods=%d/lookahead=%d", npods, look), func(b *testing.B) {
				fp := newFakePods(1)
				names := make([]string, npods)
				detours := make([]float64, npods)
				for i := range names {
					names[i] = fmt.Sprintf("p%d", i)
					detours[i] = float64(i)
					if i < npods-1 {
						fp.add(names[i], 1)
					}
				}
				cfg := DefaultConfig()
				cfg.AffinityLookahead = look
				c := New(cfg, fp, nil)
				items := make([]*Item, 64)
				for i := range items {
					w := &waiter{req: Request{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Tokens: 100, Pods: names, Detours: detours}, ch: make(chan error, 1)}
					items[i] = &Item{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Cost: 100, Value: w}
					c.q.Push(items[i])
					c.waiting.Add(1)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					c.mu.Lock()
					c.dispatchLocked()
					var it *Item
					for _, x := range items {
						if !x.Queued() {
							it = x
						}
					}
					w := it.Value.(*waiter)
					<-w.ch
					benchEnded(c, w)
					c.waiting.Add(1)
					it.passes = 0
					c.q.Push(it)
					c.mu.Unlock()
				}
			})
		}
	}
}

// BenchmarkDispatchHolders measures one dispatch from a backlog of 512
// requests of one tenant, each holding its prefix on one pod (listed as
// its holder, Queue.Hold), with every pod saturated but one: the look
// scores the lookahead's 32 requests, which that pod would cost a
// detour, then asks each pod with holders for room and takes the free
// pod's oldest holder from beyond the look.
func BenchmarkDispatchHolders(b *testing.B) {
	for _, npods := range []int{8, 256} {
		b.Run(fmt.Sprintf("pods=%d", npods), func(b *testing.B) {
			fp, names := onlyP0Free(npods)
			cfg := DefaultConfig()
			cfg.AffinityMaxPasses = math.MaxInt // the look's requests are passed over every time
			c := New(cfg, fp, nil)
			items := make([]*Item, 512)
			push := func(it *Item) {
				w := it.Value.(*waiter)
				it.passes = 0
				c.q.Push(it)
				c.waiting.Add(1)
				c.holdLocked(w)
				c.q.Hold(it, w.req.Pods[0])
			}
			for i := range items {
				// Its pick (and holder) first, the free pod p0 last.
				pods := []string{names[1+i%(npods-1)], names[0]}
				if i >= 32 && i%8 == 7 {
					pods = []string{names[0], names[1]}
				}
				w := &waiter{req: Request{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Tokens: 100, Pods: pods, Detours: []float64{0, 40}}, ch: make(chan error, 1), held: 40}
				items[i] = &Item{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Cost: 100, Value: w}
				w.item = items[i]
				push(items[i])
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.mu.Lock()
				c.dispatchLocked()
				var it *Item
				for _, x := range items {
					if !x.Queued() {
						it = x
					}
				}
				w := it.Value.(*waiter)
				<-w.ch
				if w.req.Pods[0] != names[0] {
					b.Fatalf("dispatched a request held on %s, want p0's holder", w.req.Pods[0])
				}
				benchEnded(c, w)
				w.holder = false
				push(it)
				c.mu.Unlock()
			}
		})
	}
}

// BenchmarkDispatchFallback dispatches from 512 waiting requests to the
// one free pod p0 when the whole look waits for other pods (their
// affinity wait holds them: p0 would cost each 40 blocks) and nothing is
// listed as p0's holder: the look scores its lookahead, then NextBest's
// fallback scans the next lookahead requests and takes the last, the
// only one of them that loses nothing on p0 (the worst case).
func BenchmarkDispatchFallback(b *testing.B) {
	for _, npods := range []int{8, 256} {
		b.Run(fmt.Sprintf("pods=%d", npods), func(b *testing.B) {
			fp, names := onlyP0Free(npods)
			cfg := DefaultConfig()
			cfg.AffinityWait, cfg.PrefillPerBlock = true, time.Millisecond
			c := New(cfg, fp, nil)
			now := time.Unix(1_000_000, 0)
			c.now = func() time.Time { return now } // the affinity waits never run out
			look := cfg.AffinityLookahead
			push := func(it *Item) {
				it.passes = 0
				c.q.Push(it)
			}
			// beyond is the queue past the look, in order: look-1 requests
			// held like the look's, then one that loses nothing, repeated.
			var beyond []*Item
			for i := range 512 {
				pods, detours := []string{names[1+i%(npods-1)], names[0]}, []float64{0, 40}
				if i >= look && (i-look)%look == look-1 {
					detours = nil // loses nothing anywhere
				}
				w := &waiter{req: Request{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Tokens: 100, Pods: pods, Detours: detours}, ch: make(chan error, 1)}
				it := &Item{Tenant: "t", Band: auth.PriorityStandard, Weight: 1, Cost: 100, Value: w}
				w.item = it
				push(it)
				if i >= look {
					beyond = append(beyond, it)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				c.mu.Lock()
				c.dispatchLocked()
				b.StopTimer()
				taken := beyond[look-1]
				if taken.Queued() {
					b.Fatalf("the request that loses nothing still waits (%d waiting)", c.q.Len())
				}
				w := taken.Value.(*waiter)
				<-w.ch
				benchEnded(c, w)
				// The held ones it passed go to the back, then it: the next
				// look past the look is alike.
				for _, it := range beyond[:look-1] {
					c.q.Remove(it)
					push(it)
				}
				push(taken)
				beyond = append(beyond[look:], beyond[:look]...)
				c.mu.Unlock()
				b.StartTimer()
			}
		})
	}
}

// onlyP0Free returns npods pods of one slot each, named p0, p1..., every
// one full but p0.
func onlyP0Free(npods int) (*fakePods, []string) {
	fp := newFakePods(1)
	names := make([]string, npods)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
		if i > 0 {
			fp.add(names[i], 1)
		}
	}
	return fp, names
}

// benchEnded undoes what dispatching w did, as if it had started and
// ended at once, so that a benchmark can queue it again: nothing pending
// or claimed, its tenant's grant given back.
func benchEnded(c *Controller, w *waiter) {
	c.pending = 0
	clear(c.claimed)
	w.claim = ""
	c.grantedLocked(w.req.Tenant, w.req.Band, -1)
}
