package flowcontrol

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestFreedPodTakesItsHolderFromBeyondTheLookahead queues, behind more
// requests than the lookahead, a request whose prefix pod a holds: when a
// frees, it takes that holder from the back of the queue, not the head,
// which any pod serves as well (the holders' look, queue_holders.go);
// with a lookahead of 1 (first come, first served) the head goes.
func TestFreedPodTakesItsHolderFromBeyondTheLookahead(t *testing.T) {
	for _, tc := range []struct {
		lookahead  int
		wantHolder bool
	}{{2, true}, {1, false}} {
		cfg := testConfig()
		cfg.AffinityLookahead = tc.lookahead
		pods := newFakePods(1)
		c := start(t, cfg, pods)
		pods.add("a", 1)
		pods.add("b", 1)
		ctx, cancel := context.WithCancel(context.Background())
		var anywhere []<-chan admitResult
		for i := range 3 {
			anywhere = append(anywhere, admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"b", "a"}}))
			eventually(t, "a request anywhere to wait", func() bool { return queued(c) == i+1 })
		}
		holder := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 40}})
		eventually(t, "the holder to wait", func() bool { return queued(c) == 4 })

		pods.add("a", -1)
		select {
		case r := <-holder:
			if !tc.wantHolder || r.err != nil {
				t.Fatalf("lookahead %d: the holder went first (err %v), want the head", tc.lookahead, r.err)
			}
			if i := r.g.Place([]string{"a", "b"}, []float64{0, 40}); i != -1 {
				t.Fatalf("lookahead %d: the holder placed at %d, want its pick a", tc.lookahead, i)
			}
		case r := <-anywhere[0]:
			if tc.wantHolder || r.err != nil {
				t.Fatalf("lookahead %d: the head went (err %v), want the holder beyond the lookahead", tc.lookahead, r.err)
			}
		case <-anywhere[1]:
			t.Fatalf("lookahead %d: the second request went", tc.lookahead)
		case <-anywhere[2]:
			t.Fatalf("lookahead %d: the third request went", tc.lookahead)
		}
		cancel()
	}
}

// TestReleasedFollowerIsItsLeadersPodsHolder checks that a follower
// whose leader started is listed under the leader's pod: when that pod
// frees it takes the follower from beyond the lookahead.
func TestReleasedFollowerIsItsLeadersPodsHolder(t *testing.T) {
	cfg := waitConfig()
	cfg.AffinityLookahead = 2
	pods := newFakePods(1)
	c, _ := startClocked(t, cfg, pods)
	pods.add("a", 1)
	pods.add("b", 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leader := admitAsync(ctx, c, Request{Key: 1, Tokens: 10, Pods: []string{"a", "b"}})
	eventually(t, "the leader to wait", func() bool { return queued(c) == 1 })
	var anywhere []<-chan admitResult
	for i := range 2 {
		anywhere = append(anywhere, admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"b", "a"}}))
		eventually(t, "a request anywhere to wait", func() bool { return queued(c) == i+2 })
	}
	follower := admitAsync(ctx, c, Request{Key: 2, Follows: 1, FollowBlocks: 100, Tokens: 10, Pods: []string{"b", "a"}})
	eventually(t, "the follower to wait", func() bool { return queued(c) == 4 })

	// a frees: the leader, at the head, goes there and starts.
	startLeaderOnA(t, pods, leader)
	// a frees again: the follower, fourth in line and beyond the
	// lookahead, takes it.
	pods.add("a", -1)
	select {
	case f := <-follower:
		if f.err != nil {
			t.Fatal(f.err)
		}
	case <-anywhere[0]:
		t.Fatal("the head took the leader's pod, want the follower")
	case <-anywhere[1]:
		t.Fatal("the second request took the leader's pod, want the follower")
	}
}

// TestFreedPodTakesALosslessRequestBeyondALookThatWaits queues two
// requests that wait for pod a (b would cost each 40 blocks, and their
// affinity wait has not run), more than the lookahead, then one that
// loses nothing anywhere: when b frees, it takes that one from beyond the
// look rather than idle (NextBest's fallback); with a lookahead of 1
// (first come, first served) nothing passes the head and b stays free.
func TestFreedPodTakesALosslessRequestBeyondALookThatWaits(t *testing.T) {
	for _, tc := range []struct {
		lookahead int
		wantGone  bool
	}{{2, true}, {1, false}} {
		cfg := waitConfig()
		cfg.AffinityLookahead = tc.lookahead
		pods := newFakePods(1)
		c, _ := startClocked(t, cfg, pods)
		pods.add("a", 1)
		pods.add("b", 1)
		ctx, cancel := context.WithCancel(context.Background())
		var forA []<-chan admitResult
		for i := range 2 {
			forA = append(forA, admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 40}}))
			eventually(t, "a request for a to wait", func() bool { return queued(c) == i+1 })
		}
		anywhere := admitAsync(ctx, c, Request{Tokens: 10, Pods: []string{"a", "b"}})
		eventually(t, "the request anywhere to wait", func() bool { return queued(c) == 3 })

		pods.add("b", -1)
		if tc.wantGone {
			var r admitResult
			select {
			case r = <-anywhere:
			case <-time.After(10 * time.Second):
				t.Fatalf("lookahead %d: b has room and the request anywhere still waits", tc.lookahead)
			}
			if r.err != nil {
				t.Fatalf("lookahead %d: %v", tc.lookahead, r.err)
			}
			if i := r.g.Place([]string{"a", "b"}, nil); i != 1 {
				t.Fatalf("lookahead %d: placed at %d, want b (1)", tc.lookahead, i)
			}
		} else {
			stillWaiting(t, anywhere, "first come, first served: the head waits for a")
		}
		for i, ch := range forA {
			stillWaiting(t, ch, fmt.Sprintf("lookahead %d: request %d waits for a", tc.lookahead, i))
		}
		cancel()
	}
}
