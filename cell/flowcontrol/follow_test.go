package flowcontrol

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// queueLeaderAndFollower fills pods a and b, queues a leader (key 1)
// whose pick is a (b would cost it 40 blocks) and a follower of it whose
// own pick is b (it knew nothing of the leader's prefix) and that shares
// 100 blocks with the leader.
func queueLeaderAndFollower(t *testing.T, c *Controller, pods *fakePods, ctx context.Context) (leader, follower <-chan admitResult) {
	t.Helper()
	pods.add("a", 1)
	pods.add("b", 1)
	leader = admitAsync(ctx, c, Request{Key: 1, Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 40}})
	eventually(t, "the leader to wait", func() bool { return queued(c) == 1 })
	follower = admitAsync(context.Background(), c, Request{Key: 2, Follows: 1, FollowBlocks: 100, Tokens: 10, Pods: []string{"b", "a"}})
	eventually(t, "the follower to wait", func() bool { return queued(c) == 2 })
	return leader, follower
}

// startLeaderOnA frees pod a for a queued leader, and returns its grant
// once it started there (a full again).
func startLeaderOnA(t *testing.T, pods *fakePods, leader <-chan admitResult) admitResult {
	t.Helper()
	pods.add("a", -1)
	r := <-leader
	if r.err != nil {
		t.Fatal(r.err)
	}
	pods.add("a", 1)
	r.g.StartedOn("a")
	return r
}

func TestFollowerGoesAfterItsLeaderToItsPod(t *testing.T) {
	pods := newFakePods(1)
	c, clk := startClocked(t, waitConfig(), pods)
	leader, follower := queueLeaderAndFollower(t, c, pods, context.Background())

	// b frees: the leader waits for a (b costs it 40 ms of prefill), and
	// the follower waits for the leader, though b has room and costs it
	// nothing it knows of.
	pods.add("b", -1)
	stillWaiting(t, follower, "the leader has not started")
	// a frees: the leader goes there and starts.
	pods.add("a", -1)
	r := <-leader
	if r.err != nil || r.g.Place([]string{"a", "b"}, []float64{0, 40}) != -1 {
		t.Fatalf("leader: err %v, want it placed on a", r.err)
	}
	pods.add("a", 1)
	r.g.StartedOn("a")
	// The follower may now go to a at once, to b only after twice the
	// 100 ms its shared blocks take to prefill: the leader's prefill of
	// them, then as long again for a.
	clk.advance(100 * time.Millisecond)
	stillWaiting(t, follower, "a is full, the leader still computes the shared blocks")
	clk.advance(99 * time.Millisecond)
	stillWaiting(t, follower, "a is full, b is not open yet")
	clk.advance(time.Millisecond)
	f := <-follower
	if f.err != nil {
		t.Fatal(f.err)
	}
	if i := f.g.Place([]string{"b", "a"}, nil); i != -1 {
		t.Fatalf("follower placed at %d, want its pick b (open after the wait)", i)
	}
}

func TestFollowerTakesTheLeadersPodAtOnce(t *testing.T) {
	pods := newFakePods(1)
	c, _ := startClocked(t, waitConfig(), pods)
	leader, follower := queueLeaderAndFollower(t, c, pods, context.Background())
	r := startLeaderOnA(t, pods, leader)
	stillWaiting(t, follower, "a is full")
	r.g.Done(0)
	pods.add("a", -1) // the leader ended: a has room
	f := <-follower
	if f.err != nil {
		t.Fatal(f.err)
	}
	// After its re-pick (which now sees the leader's blocks on a).
	if i := f.g.Place([]string{"a", "b"}, []float64{0, 100}); i != -1 {
		t.Fatalf("follower placed at %d, want a", i)
	}
}

func TestLeaderLeavingFreesItsFollowers(t *testing.T) {
	pods := newFakePods(1)
	c, _ := startClocked(t, waitConfig(), pods)
	ctx, cancel := context.WithCancel(context.Background())
	leader, follower := queueLeaderAndFollower(t, c, pods, ctx)
	pods.add("b", -1)
	stillWaiting(t, follower, "the leader still waits")
	cancel()
	if r := <-leader; r.err == nil {
		t.Fatal("the cancelled leader was admitted")
	}
	if f := <-follower; f.err != nil {
		t.Fatalf("follower after its leader left: %v", f.err)
	}
}

func TestFollowerOfAStartedLeaderIsFree(t *testing.T) {
	// A leader that no longer waits leads nobody: the follower is an
	// ordinary request.
	pods := newFakePods(1)
	c, _ := startClocked(t, waitConfig(), pods)
	g, err := c.Admit(context.Background(), Request{Key: 1, Tokens: 10, Pods: []string{"a", "b"}})
	if err != nil || g.Queued() {
		t.Fatalf("leader: %v, queued %v", err, g.Queued())
	}
	g.StartedOn("a")
	f, err := c.Admit(context.Background(), Request{Key: 2, Follows: 1, FollowBlocks: 100, Tokens: 10, Pods: []string{"b", "a"}})
	if err != nil || f.Queued() {
		t.Fatalf("follower: %v, queued %v; want admitted at once", err, f.Queued())
	}
	if n := len(c.leaders); n != 0 {
		t.Fatalf("%d leaders registered, want 0", n)
	}
}

// TestQueuedRunsOnlyForARequestThatWaits checks Request.Queued, where the
// cell indexes a request for its followers: not called for a request
// admitted at once, called once for one that joins the queue, before it
// is dispatched.
func TestQueuedRunsOnlyForARequestThatWaits(t *testing.T) {
	pods := newFakePods(1)
	c, _ := startClocked(t, waitConfig(), pods)
	var calls atomic.Int32
	queuedHook := func() { calls.Add(1) }

	r := <-admitAsync(context.Background(), c, Request{Key: 1, Tokens: 10, Pods: []string{"a"}, Queued: queuedHook})
	if r.err != nil || calls.Load() != 0 {
		t.Fatalf("admitted at once: err %v, Queued called %d times, want 0", r.err, calls.Load())
	}
	pods.add("a", 1)
	waiting := admitAsync(context.Background(), c, Request{Key: 2, Tokens: 10, Pods: []string{"a"}, Queued: queuedHook})
	eventually(t, "Queued to be called", func() bool { return calls.Load() == 1 })
	stillWaiting(t, waiting, "a is full")
	pods.add("a", -1)
	if w := <-waiting; w.err != nil || !w.g.Queued() {
		t.Fatalf("err %v, want a request that waited", w.err)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Queued called %d times, want once", n)
	}
}

// TestFollowerCountsItsLeadersBlocksElsewhere checks that a follower
// whose leader started on a, free to go anywhere after its wait, costs
// another pod the blocks it shares with its leader: when b frees, a
// later request whose prefix nobody holds takes b, and the follower waits
// for a.
func TestFollowerCountsItsLeadersBlocksElsewhere(t *testing.T) {
	pods := newFakePods(1)
	c, clk := startClocked(t, waitConfig(), pods)
	leader, follower := queueLeaderAndFollower(t, c, pods, context.Background())
	startLeaderOnA(t, pods, leader)
	cold := admitAsync(context.Background(), c, Request{Tokens: 10, Pods: []string{"b", "a"}})
	eventually(t, "the cold request to wait", func() bool { return queued(c) == 2 })
	clk.advance(100 * time.Millisecond) // the follower may go anywhere now
	pods.add("b", -1)
	select {
	case r := <-cold:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case f := <-follower:
		t.Fatalf("the follower took b (err %v), want the request that loses nothing there", f.err)
	}
	stillWaiting(t, follower, "a is full, b taken")
}

// TestLeaderPodWhileItHasRoom checks Grant.LeaderPod: a follower's
// leader's pod while it has room for the follower, nothing once it is
// full, and nothing for a request that follows no one.
func TestLeaderPodWhileItHasRoom(t *testing.T) {
	pods := newFakePods(2)
	c, clk := startClocked(t, waitConfig(), pods)
	pods.add("a", 2)
	pods.add("b", 2)
	leader := admitAsync(context.Background(), c, Request{Key: 1, Tokens: 10, Pods: []string{"a", "b"}, Detours: []float64{0, 40}})
	eventually(t, "the leader to wait", func() bool { return queued(c) == 1 })
	follower := admitAsync(context.Background(), c, Request{Key: 2, Follows: 1, FollowBlocks: 100, Tokens: 10, Pods: []string{"b", "a"}})
	eventually(t, "the follower to wait", func() bool { return queued(c) == 2 })
	pods.add("a", -1)
	r := <-leader
	if r.err != nil {
		t.Fatal(r.err)
	}
	if p := r.g.LeaderPod(); p != "" {
		t.Fatalf("the leader's own LeaderPod = %q, want none", p)
	}
	pods.add("a", 1)
	r.g.StartedOn("a")
	pods.add("b", -1)
	clk.advance(200 * time.Millisecond) // b opens to the follower
	f := <-follower
	if f.err != nil {
		t.Fatal(f.err)
	}
	if p := f.g.LeaderPod(); p != "" {
		t.Fatalf("LeaderPod = %q while a is full, want none", p)
	}
	pods.add("a", -1)
	if p := f.g.LeaderPod(); p != "a" {
		t.Fatalf("LeaderPod = %q with room on a, want a", p)
	}
}
