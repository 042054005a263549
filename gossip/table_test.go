package gossip

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestTableLifecycle(t *testing.T) {
	now := time.Unix(1000, 0)
	tab := NewTable(func() time.Time { return now })
	s1 := sampleSummary(t, 1, 5)
	snap := &Snapshot{Cell: "a", Epoch: 5, Gen: 1, Params: s1.Params(), Elements: s1.Elements(), Bits: s1.Words()}

	if _, err := tab.ApplySnapshot(snap); !errors.Is(err, ErrUnknownCell) {
		t.Fatalf("snapshot before the member: err = %v, want ErrUnknownCell", err)
	}
	tab.SetMember(Member{Name: "global-x", Role: RoleGlobal})
	tab.SetMember(Member{Name: "na", Role: RoleCell, CellID: "a"})
	tab.SetMember(Member{Name: "nb", Role: RoleCell, CellID: "b"})
	if got, want := tab.Len(), 2; got != want {
		t.Fatalf("Len = %d, want %d (globals are not cells)", got, want)
	}
	behind, err := tab.ApplyHeader(&Header{Cell: "a", Epoch: 5, Gen: 1, Seq: 3, Load: Load{Pods: 2}, Params: s1.Params()})
	if err != nil || !behind {
		t.Fatalf("header announcing gen 1: behind = %v, err = %v; want true, nil", behind, err)
	}
	// An older header does not roll the load back.
	if _, err := tab.ApplyHeader(&Header{Cell: "a", Epoch: 5, Gen: 1, Seq: 2, Load: Load{Pods: 9}, Params: s1.Params()}); err != nil {
		t.Fatal(err)
	}
	if e, _ := tab.Get("a"); e.Load.Pods != 2 || e.Seq != 3 {
		t.Fatalf("after an older header: load %+v seq %d, want pods 2 seq 3", e.Load, e.Seq)
	}
	now = now.Add(time.Second)
	if ok, err := tab.ApplySnapshot(snap); !ok || err != nil {
		t.Fatalf("ApplySnapshot = %v, %v; want true, nil", ok, err)
	}
	e, ok := tab.Get("a")
	if !ok || e.Behind() || !e.Summary.Equal(s1) || e.Member.Name != "na" {
		t.Fatalf("entry = %+v, want gen 1 held, not behind, member na", e)
	}
	if got, want := e.Age(now.Add(3*time.Second)), 3*time.Second; got != want {
		t.Fatalf("Age = %v, want %v", got, want)
	}
	snapView := tab.Snapshot()
	if len(snapView) != 2 || snapView[0].Cell != "a" || snapView[1].Cell != "b" {
		t.Fatalf("Snapshot = %+v, want cells a, b in order", snapView)
	}
	if !tab.RemoveMember("na") {
		t.Fatalf("RemoveMember(na) = false, want true")
	}
	if _, ok := tab.Get("a"); ok {
		t.Fatalf("cell a still present after its member was removed")
	}
	// Views handed out earlier are immutable.
	if len(snapView) != 2 || snapView[0].Summary == nil {
		t.Fatalf("an earlier Snapshot changed: %+v", snapView)
	}
	if tab.RemoveMember("nobody") {
		t.Fatalf("RemoveMember(nobody) = true, want false")
	}
}

// TestTableConcurrentReaders runs readers that query summaries while a
// writer applies generations and membership churn (run with -race).
func TestTableConcurrentReaders(t *testing.T) {
	tab := NewTable(nil)
	pub, _ := NewPublisher("a", 1, 4)
	cfg := DefaultSummaryConfig()
	cfg.ExpectedElements = 256
	b := mustBuilder(t, cfg)
	chain := randChain(newRand(1), 64)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, e := range tab.Snapshot() {
					if e.Summary != nil && e.Summary.Depth(chain) < 0 {
						t.Errorf("negative depth")
					}
				}
			}
		}()
	}
	rep := &Replica{}
	for gen := 1; gen <= 50; gen++ {
		tab.SetMember(Member{Name: "na", Role: RoleCell, CellID: "a"})
		b.AddChain(chain[:gen])
		pub.Publish(b.Build())
		c := pub.Since(rep.Epoch, rep.Gen)
		if c.Delta != nil {
			if _, err := tab.ApplyDelta(c.Delta); err != nil {
				if _, err := tab.ApplySnapshot(pub.Snapshot()); err != nil {
					t.Fatal(err)
				}
			}
		} else if _, err := tab.ApplySnapshot(c.Snapshot); err != nil {
			t.Fatal(err)
		}
		e, _ := tab.Get("a")
		rep.Epoch, rep.Gen = e.Epoch, e.Gen
		if gen%10 == 0 {
			tab.RemoveMember("na")
			rep = &Replica{}
		}
	}
	close(stop)
	wg.Wait()
}

func TestTableHeaderEdgeCases(t *testing.T) {
	tab := NewTable(nil)
	tab.SetMember(Member{Name: "na", Role: RoleCell, CellID: "a"})
	// A cell that has not published yet: its header is not "behind".
	if behind, err := tab.ApplyHeader(&Header{Cell: "a", Epoch: 5, Seq: 1, Load: Load{Pods: 1}}); behind || err != nil {
		t.Fatalf("gen-0 header: behind = %v, err = %v; want false, nil", behind, err)
	}
	s := sampleSummary(t, 3, 5)
	snap := &Snapshot{Cell: "a", Epoch: 5, Gen: 3, Params: s.Params(), Elements: s.Elements(), Bits: s.Words()}
	if ok, err := tab.ApplySnapshot(snap); !ok || err != nil {
		t.Fatalf("ApplySnapshot = %v, %v", ok, err)
	}
	// The cell restarts (a newer epoch, nothing published): the old
	// summary is dropped, and nothing is announced yet.
	behind, err := tab.ApplyHeader(&Header{Cell: "a", Epoch: 6, Seq: 1, Load: Load{Pods: 2}})
	e, _ := tab.Get("a")
	if behind || err != nil || e.Summary != nil || e.Gen != 0 || e.Load.Pods != 2 {
		t.Fatalf("restart header: behind %v err %v entry %+v; want no summary, load pods 2", behind, err, e)
	}
	// A stale snapshot of the old epoch, still in flight, is refused.
	if ok, err := tab.ApplySnapshot(snap); ok || err != nil {
		t.Fatalf("old-epoch snapshot after restart = %v, %v; want false, nil", ok, err)
	}
	newSnap := *snap
	newSnap.Epoch, newSnap.Gen = 6, 1
	if ok, err := tab.ApplySnapshot(&newSnap); !ok || err != nil {
		t.Fatalf("new-epoch snapshot = %v, %v; want true, nil", ok, err)
	}
	if ok, _ := tab.ApplySnapshot(snap); ok {
		t.Fatalf("old-epoch snapshot applied over the new epoch")
	}
}
