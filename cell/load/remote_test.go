package load

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRemoteLifecycle follows a peer's ticket through start, first token,
// done, and checks that duplicates and strays change nothing.
func TestRemoteLifecycle(t *testing.T) {
	tr := NewTracker()
	now := time.Unix(100, 0)
	if !tr.ApplyRemote("r2", Change{Op: OpStart, ID: 1, Pod: "p", Blocks: 10, PrefillBlocks: 6, Template: "t"}, now, time.Minute) {
		t.Fatalf("remote start not applied")
	}
	if tr.ApplyRemote("r2", Change{Op: OpStart, ID: 1, Pod: "p", Blocks: 10, PrefillBlocks: 6}, now, time.Minute) {
		t.Fatalf("a duplicate start was applied")
	}
	if got := tr.Usage("p"); got.Requests != 1 || got.Blocks != 10 || got.PrefillBlocks != 6 || got.Templates["t"] != 1 {
		t.Fatalf("after remote start: %+v", got)
	}
	tr.ApplyRemote("r2", Change{Op: OpFirstToken, ID: 1}, now, time.Minute)
	if got := tr.Usage("p"); got.PrefillBlocks != 0 {
		t.Fatalf("prefill after remote first token = %d, want 0", got.PrefillBlocks)
	}
	if tr.ApplyRemote("r3", Change{Op: OpDone, ID: 1}, now, time.Minute) {
		t.Fatalf("another origin's done freed r2's ticket")
	}
	tr.ApplyRemote("r2", Change{Op: OpDone, ID: 1}, now, time.Minute)
	if got := tr.Usage("p"); got.Requests != 0 || tr.RemoteTickets() != 0 {
		t.Fatalf("after remote done: %+v, %d remote tickets", got, tr.RemoteTickets())
	}
	if tr.ApplyRemote("r2", Change{Op: OpStart, ID: 2, Pod: "p", Blocks: 1, PrefillBlocks: 2}, now, time.Minute) {
		t.Fatalf("a start with more prefill than blocks was applied")
	}
}

// TestRemoteLive checks a resync's live change: it starts a ticket whose
// start was lost, marks a first token that was lost, renews the expiry,
// and changes nothing when the ticket is already as it says.
func TestRemoteLive(t *testing.T) {
	tr := NewTracker()
	now := time.Unix(100, 0)
	live := Change{Op: OpLive, ID: 3, Pod: "p", Blocks: 10, PrefillBlocks: 4, Template: "t"}
	if !tr.ApplyRemote("r2", live, now, 5*time.Second) {
		t.Fatalf("a live change of an unknown ticket did not start it")
	}
	if got := tr.Usage("p"); got.Requests != 1 || got.Blocks != 10 || got.PrefillBlocks != 4 || got.Templates["t"] != 1 {
		t.Fatalf("after the live start: %+v", got)
	}
	if tr.ApplyRemote("r2", Change{Op: OpStart, ID: 3, Pod: "p", Blocks: 10, PrefillBlocks: 4}, now, 5*time.Second) {
		t.Fatalf("the start that came after the resync counted again")
	}
	if tr.ApplyRemote("r2", live, now.Add(4*time.Second), 5*time.Second) {
		t.Fatalf("an unchanged live change reported a change")
	}
	if n := tr.ExpireRemote(now.Add(6 * time.Second)); n != 0 {
		t.Fatalf("a renewed ticket expired at its first expiry")
	}
	live.PrefillDone = true
	if !tr.ApplyRemote("r2", live, now.Add(8*time.Second), 5*time.Second) || tr.Usage("p").PrefillBlocks != 0 {
		t.Fatalf("a live change with the prefill done left %+v", tr.Usage("p"))
	}
	if tr.ApplyRemote("r2", Change{Op: OpLive, ID: 4, Pod: "p", Blocks: 1, PrefillBlocks: 2}, now, time.Second) {
		t.Fatalf("a live change with more prefill than blocks was applied")
	}
	if n := tr.ExpireRemote(now.Add(14 * time.Second)); n != 1 || tr.Usage("p").Requests != 0 {
		t.Fatalf("ExpireRemote after the lease = %d, p %+v; want 1, idle", n, tr.Usage("p"))
	}
}

// TestRemoteExpiryAndDrop checks the two bounds on a dead peer's load: its
// tickets expire after the TTL, and all go at once when it is dropped.
func TestRemoteExpiryAndDrop(t *testing.T) {
	tr := NewTracker()
	now := time.Unix(100, 0)
	tr.ApplyRemote("r2", Change{Op: OpStart, ID: 1, Pod: "p", Blocks: 4}, now, 10*time.Second)
	tr.ApplyRemote("r2", Change{Op: OpStart, ID: 2, Pod: "p", Blocks: 4}, now.Add(5*time.Second), 10*time.Second)
	tr.ApplyRemote("r3", Change{Op: OpStart, ID: 1, Pod: "q", Blocks: 4}, now, time.Hour)
	local := tr.Start("p", 2, 0, "")
	if n := tr.ExpireRemote(now.Add(11 * time.Second)); n != 1 {
		t.Fatalf("ExpireRemote = %d, want 1", n)
	}
	if got := tr.Usage("p"); got.Requests != 2 || got.Blocks != 6 {
		t.Fatalf("after expiry: %+v, want the local and r2's second ticket", got)
	}
	if n := tr.DropOrigin("r3"); n != 1 || tr.Usage("q").Requests != 0 {
		t.Fatalf("DropOrigin(r3) = %d, q = %+v; want 1, idle", n, tr.Usage("q"))
	}
	tr.Done(local)
	if n := tr.DropOrigin("r2"); n != 1 || tr.Usage("p").Requests != 0 || tr.RemoteTickets() != 0 {
		t.Fatalf("DropOrigin(r2) = %d, p = %+v", n, tr.Usage("p"))
	}
}

// TestRemoteAgainstModel replays random local and remote operations and
// compares every pod's usage with a naive model that sums the live tickets.
func TestRemoteAgainstModel(t *testing.T) {
	type mt struct {
		pod             string
		blocks, prefill int
		first           bool
		expires         time.Time
	}
	r := rand.New(rand.NewPCG(7, 7))
	tr := NewTracker()
	var changes []Change
	tr.SetObserver(func(c Change) { changes = append(changes, c) })
	model := map[string]map[uint64]*mt{} // origin -> id -> ticket; "" local
	local := map[uint64]*Ticket{}
	now := time.Unix(0, 0)
	ttl := 30 * time.Second
	pods := []string{"a", "b", "c"}
	origins := []string{"", "r2", "r3"}
	var nextRemote uint64
	for step := range 4000 {
		now = now.Add(time.Duration(r.IntN(1000)) * time.Millisecond)
		origin := origins[r.IntN(len(origins))]
		if model[origin] == nil {
			model[origin] = map[uint64]*mt{}
		}
		live := model[origin]
		var ids []uint64
		for id := range live {
			ids = append(ids, id)
		}
		switch k := r.IntN(12); {
		case k < 4 || len(ids) == 0:
			pod := pods[r.IntN(len(pods))]
			blocks := r.IntN(20)
			prefill := r.IntN(blocks + 1)
			if origin == "" {
				tk := tr.Start(pod, blocks, prefill, "")
				local[tk.id] = tk
				live[tk.id] = &mt{pod: pod, blocks: blocks, prefill: prefill}
			} else {
				nextRemote++
				tr.ApplyRemote(origin, Change{Op: OpStart, ID: nextRemote, Pod: pod, Blocks: blocks, PrefillBlocks: prefill}, now, ttl)
				live[nextRemote] = &mt{pod: pod, blocks: blocks, prefill: prefill, expires: now.Add(ttl)}
			}
		case k < 7:
			id := ids[r.IntN(len(ids))]
			if origin == "" {
				tr.FirstToken(local[id])
			} else {
				tr.ApplyRemote(origin, Change{Op: OpFirstToken, ID: id}, now, ttl)
				live[id].expires = now.Add(ttl)
			}
			live[id].first = true
		case k < 9:
			id := ids[r.IntN(len(ids))]
			if origin == "" {
				tr.Done(local[id])
			} else {
				tr.ApplyRemote(origin, Change{Op: OpDone, ID: id}, now, ttl)
			}
			delete(live, id)
		case k < 11 && origin != "":
			// A resync: of a held ticket (renewed, perhaps prefilled) or
			// of one whose start was lost.
			if r.IntN(2) == 0 {
				id := ids[r.IntN(len(ids))]
				x := live[id]
				done := x.first || r.IntN(2) == 0
				tr.ApplyRemote(origin, Change{Op: OpLive, ID: id, Pod: x.pod, Blocks: x.blocks, PrefillBlocks: x.prefill, PrefillDone: done}, now, ttl)
				x.first, x.expires = done, now.Add(ttl)
			} else {
				nextRemote++
				pod := pods[r.IntN(len(pods))]
				blocks := r.IntN(20)
				prefill := r.IntN(blocks + 1)
				done := r.IntN(2) == 0
				tr.ApplyRemote(origin, Change{Op: OpLive, ID: nextRemote, Pod: pod, Blocks: blocks, PrefillBlocks: prefill, PrefillDone: done}, now, ttl)
				live[nextRemote] = &mt{pod: pod, blocks: blocks, prefill: prefill, first: done, expires: now.Add(ttl)}
			}
		default:
			tr.ExpireRemote(now)
			for o, m := range model {
				for id, x := range m {
					if o != "" && now.After(x.expires) {
						delete(m, id)
					}
				}
			}
		}
		for _, pod := range pods {
			var want Usage
			for _, m := range model {
				for _, x := range m {
					if x.pod == pod {
						want.Requests++
						want.Blocks += x.blocks
						if !x.first {
							want.PrefillBlocks += x.prefill
						}
					}
				}
			}
			got := tr.Usage(pod)
			if got.Requests != want.Requests || got.Blocks != want.Blocks || got.PrefillBlocks != want.PrefillBlocks {
				t.Fatalf("step %d pod %s: got %+v, want %+v", step, pod, got, want)
			}
		}
	}
	if len(changes) == 0 || changes[0].Op != OpStart || changes[0].ID == 0 {
		t.Fatalf("observer saw %d changes, first %+v; want local starts with ids", len(changes), changes)
	}
}
