package cell

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// promptFrom is a completion body whose prompt is the tokens from, from+1,
// ... for n tokens, then more's.
func promptFrom(from, n int, more ...int) string {
	var b strings.Builder
	b.WriteString(`{"model":"m","max_tokens":16,"prompt":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, from+i)
	}
	for _, t := range more {
		fmt.Fprintf(&b, ",%d", t)
	}
	b.WriteString("]}")
	return b.String()
}

// TestFollowerLandsOnItsLeadersPod runs two pods that each serve one
// request at a time, both busy, while a conversation's first turn (the
// leader) and then its next turn (the follower, whose prompt extends the
// leader's) queue in the cell. Both pods then free together: the leader
// takes one, and the follower, whose prefix is about to be computed
// there, must wait for that pod rather than take the other one and
// prefill it again. The leader joined an empty queue, so this also checks
// that a request is indexed for followers when it joins the queue, not
// only when others already waited.
func TestFollowerLandsOnItsLeadersPod(t *testing.T) {
	a, b := newSlowPod(t, "pod-a", 0, make(chan struct{})), newSlowPod(t, "pod-b", 0, make(chan struct{}))
	cfg := flowCellConfig(a, b)
	// A block's prefill is worth far longer than the test: the follower
	// never gives up on its leader's pod.
	cfg.Routing.Cost.PrefillPerTokenUs = 1e6
	c := startCell(t, cfg)
	waitFor(t, "the pods' model", func() bool { return c.modelServed("m") })
	base := "http://" + c.HTTPAddr()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel() // the requests still waiting end with the test
	send := func(body string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	on := func(first int) *slowPod {
		switch {
		case a.has(first):
			return a
		case b.has(first):
			return b
		}
		return nil
	}

	// Both pods busy with unrelated prompts.
	send(promptFrom(1000, 128))
	waitFor(t, "the first blocker on a pod", func() bool { return on(1000) != nil })
	send(promptFrom(2000, 128))
	waitFor(t, "the second blocker on a pod", func() bool { return on(2000) != nil })
	// The leader queues alone, then its follower behind it.
	send(promptFrom(3000, 128))
	waitFor(t, "the leader queued", func() bool { return c.flow.Waiting() == 1 })
	send(promptFrom(3000, 128, 5000, 5001, 5002, 5003, 5004, 5005, 5006, 5007, 5008, 5009, 5010, 5011, 5012, 5013, 5014, 5015, 5016, 5017, 5018, 5019, 5020, 5021, 5022, 5023, 5024, 5025, 5026, 5027, 5028, 5029, 5030, 5031))
	waitFor(t, "the follower queued", func() bool { return c.flow.Waiting() == 2 })

	// Both pods free together.
	a.gate <- struct{}{}
	b.gate <- struct{}{}
	waitFor(t, "the leader on a pod", func() bool { return on(3000) != nil })
	lead := on(3000)
	other := a
	if lead == a {
		other = b
	}
	// The leader's pod frees: the follower goes there, not to the pod
	// that was free all along.
	lead.gate <- struct{}{}
	waitFor(t, "the follower on a pod", func() bool {
		return len(lead.seen())+len(other.seen()) == 4
	})
	got, elsewhere := lead.seen(), other.seen()
	if len(got) != 3 || got[2] != "3000" || len(elsewhere) != 1 {
		t.Fatalf("leader's pod %s got %v, the other %s got %v: want the follower (3000...5031) after the leader on the leader's pod", lead.id, got, other.id, elsewhere)
	}
	lead.gate <- struct{}{}
}
