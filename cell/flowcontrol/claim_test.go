package flowcontrol

import (
	"context"
	"testing"
	"time"
)

func TestDispatchFillsSeveralPodsAtOnce(t *testing.T) {
	// Three pods free up together: three waiting requests are dispatched
	// before any of them has started (one per pod), not one at a time.
	pods := newFakePods(1)
	c := start(t, testConfig(), pods)
	all := []string{"a", "b", "c"}
	for _, p := range all {
		pods.add(p, 1)
	}
	ctx := context.Background()
	var chs []<-chan admitResult
	for i := range 4 {
		chs = append(chs, admitAsync(ctx, c, Request{Tokens: 10, Pods: all}))
		eventually(t, "the requests to wait", func() bool { return queued(c) == i+1 })
	}
	for _, p := range all {
		pods.add(p, -1)
	}
	got := map[int]bool{}
	eventually(t, "three dispatches", func() bool {
		for i, ch := range chs {
			select {
			case r := <-ch:
				if r.err != nil {
					t.Fatal(r.err)
				}
				got[i] = true
			default:
			}
		}
		return len(got) == 3
	})
	// The fourth waits: every pod is claimed by a dispatch that has not
	// started, though the pods' load does not show them yet.
	for i, ch := range chs {
		if !got[i] {
			stillWaiting(t, ch, "every pod is claimed")
		}
	}
	c.mu.Lock()
	claims := len(c.claimed)
	c.mu.Unlock()
	if claims != 3 {
		t.Fatalf("%d pods claimed, want 3", claims)
	}
	if n := c.Waiting(); n != 1 {
		t.Fatalf("Waiting = %d, want 1", n)
	}
}

func TestClaimEndsWhenTheDispatchStarts(t *testing.T) {
	pods := newFakePods(1)
	c := start(t, testConfig(), pods)
	pods.add("a", 1)
	ctx := context.Background()
	first := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a"}})
	eventually(t, "the first to wait", func() bool { return queued(c) == 1 })
	second := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a"}})
	eventually(t, "the second to wait", func() bool { return queued(c) == 2 })
	pods.add("a", -1)
	r := <-first
	if r.err != nil {
		t.Fatal(r.err)
	}
	// a looks free (the first's load is not recorded yet) but is claimed.
	stillWaiting(t, second, "a is claimed by the first dispatch")
	pods.add("a", 1)
	r.g.StartedOn("a")
	stillWaiting(t, second, "a is full")
	r.g.Done(0)
	pods.add("a", -1)
	select {
	case r := <-second:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the second request never went")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.claimed) != 1 || c.pending != 1 {
		t.Fatalf("claimed %v, pending %d: want only the second's dispatch", c.claimed, c.pending)
	}
}
