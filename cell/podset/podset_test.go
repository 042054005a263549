package podset

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

func pod(id, addr string, routable bool) Pod {
	return Pod{ID: id, Address: addr, Routable: routable, Source: SourceKubernetes, UID: "uid-" + id + "-" + addr}
}

func TestPublishMergesStaticFirst(t *testing.T) {
	s := New([]Pod{{ID: "a", Address: "10.0.0.1:8000"}})
	if v := s.Load().Version; v != 1 {
		t.Fatalf("got version %d, want 1", v)
	}
	if !s.Publish(SourceKubernetes, []Pod{pod("a", "10.9.9.9:8000", true), pod("b", "10.0.0.2:8000", false)}, nil) {
		t.Fatal("got no change, want one")
	}
	snap := s.Load()
	if snap.Version != 2 || len(snap.Pods) != 2 {
		t.Fatalf("got version %d with %d pods, want 2 with 2", snap.Version, len(snap.Pods))
	}
	a, _ := snap.Get("a")
	if a.Source != SourceStatic || a.Address != "10.0.0.1:8000" || !a.Routable {
		t.Errorf("got a = %+v, want the static pod, routable", a)
	}
	if snap.Routable("b") || !snap.Has("b") || snap.Routable("zz") {
		t.Errorf("got b routable=%v has=%v, zz routable=%v; want false true false", snap.Routable("b"), snap.Has("b"), snap.Routable("zz"))
	}
	if len(snap.Refused) != 1 || snap.Refused[0] != (Refusal{ID: "a", Source: SourceKubernetes, Reason: ReasonStatic}) {
		t.Errorf("got refused %+v, want a refused as static", snap.Refused)
	}
	if r, k := snap.Counts(); r != 1 || k != 1 {
		t.Errorf("got counts %d/%d, want 1/1", r, k)
	}
	// The same list again is no change and no new version.
	if s.Publish(SourceKubernetes, []Pod{pod("b", "10.0.0.2:8000", false), pod("a", "10.9.9.9:8000", true)}, nil) {
		t.Error("got a change for the same list, want none")
	}
	if v := s.Load().Version; v != 2 {
		t.Errorf("got version %d, want 2", v)
	}
}

func TestSubscribeCoalesces(t *testing.T) {
	s := New(nil)
	ch, cancel := s.Subscribe()
	defer cancel()
	for i := range 5 {
		s.Publish(SourceKubernetes, []Pod{pod(fmt.Sprint("p", i), "x:1", true)}, nil)
	}
	<-ch
	select {
	case <-ch:
		t.Fatal("got a second notice, want the burst coalesced into one")
	default:
	}
	if got := s.Load(); got.Version != 6 || got.Pods[0].ID != "p4" {
		t.Errorf("got version %d pods %+v, want 6 with p4", got.Version, got.Pods)
	}
	cancel()
	s.Publish(SourceKubernetes, nil, nil)
	select {
	case <-ch:
		t.Error("got a notice after cancel")
	default:
	}
}

func TestDiffCases(t *testing.T) {
	a1 := pod("a", "127.0.0.2:8000", true)
	a1nr := a1
	a1nr.Routable = false
	a2 := pod("a", "127.0.0.9:8000", true) // new IP: a new uid here too
	b := pod("b", "127.0.0.3:8000", true)
	c := pod("c", "127.0.0.4:8000", false)
	cases := []struct {
		name     string
		old, new []Pod
		want     Changes
	}{
		{"from empty", nil, []Pod{a1, b}, Changes{Added: []Pod{a1, b}}},
		{"to empty", []Pod{a1, b}, nil, Changes{Removed: []Pod{a1, b}}},
		{"not ready", []Pod{a1, b}, []Pod{a1nr, b}, Changes{Updated: []Pod{a1nr}}},
		{"new ip", []Pod{a1, b}, []Pod{a2, b}, Changes{Replaced: []Replacement{{Old: a1, New: a2}}}},
		{"mixed", []Pod{a1, b}, []Pod{a1nr, c}, Changes{Removed: []Pod{b}, Added: []Pod{c}, Updated: []Pod{a1nr}}},
		{"same", []Pod{a1, b}, []Pod{a1, b}, Changes{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(newSnapshot(1, append([]Pod(nil), tc.old...), nil), newSnapshot(2, append([]Pod(nil), tc.new...), nil))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got.Empty() != tc.want.Empty() {
				t.Errorf("got Empty %v, want %v", got.Empty(), tc.want.Empty())
			}
		})
	}
}

// naiveDiff is the reference model of Diff: maps instead of a merge walk.
func naiveDiff(old, new []Pod) Changes {
	o, n := map[string]Pod{}, map[string]Pod{}
	for _, p := range old {
		o[p.ID] = p
	}
	for _, p := range new {
		n[p.ID] = p
	}
	var c Changes
	for id, p := range o {
		q, ok := n[id]
		switch {
		case !ok:
			c.Removed = append(c.Removed, p)
		case p.UID != q.UID || p.Address != q.Address || p.ZMQEndpoint != q.ZMQEndpoint || p.ReplayEndpoint != q.ReplayEndpoint ||
			p.DataParallelSize != q.DataParallelSize || p.Events != q.Events:
			c.Replaced = append(c.Replaced, Replacement{Old: p, New: q})
		case p != q:
			c.Updated = append(c.Updated, q)
		}
	}
	for id, p := range n {
		if _, ok := o[id]; !ok {
			c.Added = append(c.Added, p)
		}
	}
	by := func(ps []Pod) { sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID }) }
	by(c.Added)
	by(c.Removed)
	by(c.Updated)
	sort.Slice(c.Replaced, func(i, j int) bool { return c.Replaced[i].New.ID < c.Replaced[j].New.ID })
	return c
}

func randomPods(r *rand.Rand) []Pod {
	var out []Pod
	for i := range 12 {
		if r.IntN(2) == 0 {
			continue
		}
		p := pod(fmt.Sprint("p", i), fmt.Sprintf("127.0.0.%d:8000", 2+r.IntN(2)), r.IntN(2) == 0)
		p.Model = []string{"", "m"}[r.IntN(2)]
		out = append(out, p)
	}
	return out
}

func TestDiffMatchesNaiveModel(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		old, new := randomPods(r), randomPods(r)
		got := Diff(newSnapshot(1, append([]Pod(nil), old...), nil), newSnapshot(2, append([]Pod(nil), new...), nil))
		want := naiveDiff(old, new)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("case %d: got %+v, want %+v", i, got, want)
		}
	}
}

// TestLoadDuringPublish reads snapshots while sources publish: every
// snapshot a reader sees is whole (its index agrees with its pods) and
// versions never go back.
func TestLoadDuringPublish(t *testing.T) {
	s := New([]Pod{{ID: "static", Address: "x:1"}})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := s.Load()
				if snap.Version < last {
					t.Errorf("version went back from %d to %d", last, snap.Version)
					return
				}
				last = snap.Version
				for _, p := range snap.Pods {
					if q, ok := snap.Get(p.ID); !ok || q != p {
						t.Errorf("snapshot %d: Get(%s) disagrees with Pods", snap.Version, p.ID)
						return
					}
				}
			}
		}()
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		s.Publish(SourceKubernetes, randomPods(r), nil)
	}
	close(stop)
	wg.Wait()
}

func BenchmarkLoadRoutable(b *testing.B) {
	var pods []Pod
	for i := range 256 {
		pods = append(pods, pod(fmt.Sprintf("pod-%03d", i), "127.0.0.1:1", true))
	}
	s := New(nil)
	s.Publish(SourceKubernetes, pods, nil)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if !s.Load().Routable(pods[i%256].ID) {
			b.Fatal("not routable")
		}
	}
}
