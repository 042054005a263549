package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/discovery/kubetest"
)

var simLabels = map[string]string{"app": "sim"}

// indexedPods returns the pods the cell lists with applied events.
func indexedPods(t testing.TB, tc *testCell) map[string]bool {
	resp, err := http.Get("http://" + tc.c.HTTPAddr() + "/v1/cell/pods")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var body struct {
		Pods []struct {
			ID      string `json:"id"`
			LastSeq string `json:"lastSeq"`
			Slots   []int  `json:"slots"`
		} `json:"pods"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, p := range body.Pods {
		if len(p.Slots) > 0 && p.LastSeq != "" && p.LastSeq != "0" {
			out[p.ID] = true
		}
	}
	return out
}

// TestScaleUnderLoad scales a discovered fleet from 0 to 8 to 2 to 0 pods
// while clients send requests: new pods receive traffic and are indexed
// from their events; no pod receives a request sent after the cell saw it
// turn not Ready or go; while a pod is routable no client request fails.
func TestScaleUnderLoad(t *testing.T) {
	p, ns := needPlane(t)
	ctx := ctxT(t)
	tc := startCell(t, p, ns)
	sims := map[string]*simPod{}
	t.Cleanup(func() {
		for _, s := range sims {
			s.stop()
		}
	})
	up := func(i int) {
		name := fmt.Sprintf("sim-%d", i)
		s := startSim(t, name, kubetest.LoopbackIP(100+i))
		sims[name] = s
		if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: name, Labels: simLabels}, s.ip); err != nil {
			t.Fatal(err)
		}
	}
	up(0)
	eventually(t, 30*time.Second, "sim-0 routable", func() (bool, string) {
		return tc.c.PodSet().Load().Routable("sim-0"), ""
	})
	l := startLoad("http://"+tc.c.HTTPAddr(), 4)
	for i := 1; i < 8; i++ {
		up(i)
	}
	eventually(t, time.Minute, "all 8 pods receive traffic and are indexed from their events", func() (bool, string) {
		idx := indexedPods(t, tc)
		missing := ""
		for name, s := range sims {
			if n, _ := s.received(); n == 0 || !idx[name] {
				missing += fmt.Sprintf(" %s(requests %d, indexed %v)", name, n, idx[name])
			}
		}
		return missing == "", missing
	})
	// Scale to 2: three pods go the graceful way (NotReady, drained,
	// deleted), three are deleted at once.
	var downed []*simPod
	for i := 2; i < 5; i++ {
		name := fmt.Sprintf("sim-%d", i)
		if err := p.SetStatus(ctx, ns, name, sims[name].ip, false); err != nil {
			t.Fatal(err)
		}
	}
	for i := 5; i < 8; i++ {
		if err := p.DeletePod(ctx, ns, fmt.Sprintf("sim-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 2; i < 8; i++ {
		name := fmt.Sprintf("sim-%d", i)
		eventually(t, 30*time.Second, name+" out of the routable set", func() (bool, string) {
			_, ok := tc.goneAt(name)
			return ok, ""
		})
		if i < 5 {
			// Not Ready: no new requests, but its index entries stay.
			if !tc.c.PodSet().Load().Has(name) || !indexedPods(t, tc)[name] {
				t.Errorf("%s: not Ready, got it dropped from the set or the index, want it kept", name)
			}
			if err := p.DeletePod(ctx, ns, name); err != nil {
				t.Fatal(err)
			}
		}
		downed = append(downed, sims[name])
	}
	eventually(t, 30*time.Second, "the deleted pods leave the cell", func() (bool, string) {
		s := tc.c.PodSet().Load()
		return len(s.Pods) == 2, state(s)
	})
	resp, err := http.Get("http://" + tc.c.HTTPAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`cellrouter_pod_set_pods{cell="cell-0",state="routable"} 2`, `cellrouter_discovery_subscribed_pods{cell="cell-0"} 2`,
		`cellrouter_pod_set_refused_pods{cell="cell-0",reason="cap"} 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	okBefore := l.ok.Load()
	eventually(t, 30*time.Second, "requests keep flowing to the 2 left", func() (bool, string) {
		return l.ok.Load() > okBefore+20, fmt.Sprint(l.ok.Load())
	})
	// At least one pod was routable from the load's start until now.
	if f := l.failed.Load(); f != 0 {
		t.Errorf("got %d failed requests while pods were routable, want 0 (first failure: %s)", f, l.firstFailure)
	}
	for _, s := range downed {
		checkNoLateRequests(t, tc, s)
		s.stop()
		delete(sims, s.name)
	}
	l.stop()
	for i := range 2 {
		if err := p.DeletePod(ctx, ns, fmt.Sprintf("sim-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "scaled to 0", func() (bool, string) {
		s := tc.c.PodSet().Load()
		return len(s.Pods) == 0, state(s)
	})
	for i := range 2 {
		checkNoLateRequests(t, tc, sims[fmt.Sprintf("sim-%d", i)])
	}
	eventually(t, 30*time.Second, "every index holder swept", func() (bool, string) {
		st := tc.c.Index().Stats()
		return st.LivePods == 0 && st.SweepingPods == 0 && st.Blocks == 0, fmt.Sprintf("%+v", st)
	})
	t.Logf("requests: %d ok, %d failed", l.ok.Load(), l.failed.Load())
}

// TestChurnUnderLoad creates and deletes 100 pods (200 changes) over about
// 30 s beside 3 stable pods while clients send requests: no client request
// fails, and afterwards the index holds exactly what the stable pods
// cache, with no slot of a churned pod left. (The issue asks for 200
// changes over 60 s; 30 s keeps CI time down with the same rate of
// change per second as the benchmark's.)
func TestChurnUnderLoad(t *testing.T) {
	p, ns := needPlane(t)
	ctx := ctxT(t)
	tc := startCell(t, p, ns)
	var stable []*simPod
	for i := range 3 {
		s := startSim(t, fmt.Sprintf("stable-%d", i), kubetest.LoopbackIP(20+i))
		t.Cleanup(s.stop)
		stable = append(stable, s)
		if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: s.name, Labels: simLabels}, s.ip); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "stable pods routable", func() (bool, string) {
		r, _ := tc.c.PodSet().Load().Counts()
		return r == 3, state(tc.c.PodSet().Load())
	})
	l := startLoad("http://"+tc.c.HTTPAddr(), 4)
	const lives = 100
	period := 30 * time.Second / lives
	type life struct {
		s       *simPod
		deleted bool
	}
	var alive []life
	churned := 0
	next := time.Now()
	for i := 0; i < lives || len(alive) > 0; i++ {
		next = next.Add(period)
		if d := time.Until(next); d > 0 {
			time.Sleep(d) // pacing the churn, not synchronising
		}
		if i < lives {
			s := startSim(t, fmt.Sprintf("churn-%03d", i), kubetest.LoopbackIP(200+i))
			if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: s.name, Labels: simLabels}, s.ip); err != nil {
				t.Fatal(err)
			}
			alive = append(alive, life{s: s})
		}
		// Each pod lives about 4 periods; then it is deleted at once.
		if len(alive) > 4 || (i >= lives && len(alive) > 0) {
			v := alive[0]
			alive = alive[1:]
			if err := p.DeletePod(ctx, ns, v.s.name); err != nil {
				t.Fatal(err)
			}
			name := v.s.name
			eventually(t, 30*time.Second, name+" gone from the cell", func() (bool, string) {
				return !tc.c.PodSet().Load().Has(name), ""
			})
			v.s.stop() // in-flight requests finish first
			churned++
		}
	}
	l.stop()
	if f := l.failed.Load(); f != 0 {
		t.Errorf("got %d failed client requests during churn, want 0 (first: %s)", f, l.firstFailure)
	}
	t.Logf("churn: %d pods created and deleted; %d requests ok", churned, l.ok.Load())
	eventually(t, time.Minute, "the index back to the stable pods alone", func() (bool, string) {
		st := tc.c.Index().Stats()
		union := map[any]bool{}
		for _, s := range stable {
			for _, h := range s.pod.CachedBlocks() {
				union[h] = true
			}
		}
		return st.LivePods == 3 && st.SweepingPods == 0 && st.Blocks == int64(len(union)),
			fmt.Sprintf("live %d sweeping %d blocks %d, stable pods cache %d", st.LivePods, st.SweepingPods, st.Blocks, len(union))
	})
}

// TestAPIServerOutage stops the API server for 10 s while clients send
// requests: the cell keeps routing to the pods it knew (no client
// request fails), and once the server is back it catches up with the
// changes made since (a pod deleted, one turned not Ready, one added).
func TestAPIServerOutage(t *testing.T) {
	p, ns := needPlane(t)
	ctx := ctxT(t)
	tc := startCell(t, p, ns)
	sims := map[string]*simPod{}
	for i := range 4 {
		s := startSim(t, fmt.Sprintf("o-%d", i), kubetest.LoopbackIP(60+i))
		t.Cleanup(s.stop)
		sims[s.name] = s
		if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: s.name, Labels: simLabels}, s.ip); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "4 pods routable", func() (bool, string) {
		r, _ := tc.c.PodSet().Load().Counts()
		return r == 4, state(tc.c.PodSet().Load())
	})
	l := startLoad("http://"+tc.c.HTTPAddr(), 4)
	defer l.stop()
	if err := p.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	before := map[string]int{}
	for name, s := range sims {
		before[name], _ = s.received()
	}
	time.Sleep(10 * time.Second) // the outage itself
	if f := l.failed.Load(); f != 0 {
		t.Errorf("got %d failed requests during the outage, want 0 (first: %s)", f, l.firstFailure)
	}
	for name, s := range sims {
		if n, _ := s.received(); n <= before[name] {
			t.Errorf("%s got no request during the outage", name)
		}
	}
	if r, _ := tc.c.PodSet().Load().Counts(); r != 4 {
		t.Errorf("got %d routable pods during the outage, want the 4 known", r)
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := p.StartAPIServer(sctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("API server down for %v", time.Since(stoppedAt).Round(time.Millisecond))
	// Changes while the cell's watch is still reconnecting.
	if err := p.DeletePod(ctx, ns, "o-0"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetStatus(ctx, ns, "o-1", sims["o-1"].ip, false); err != nil {
		t.Fatal(err)
	}
	s := startSim(t, "o-new", kubetest.LoopbackIP(70))
	t.Cleanup(s.stop)
	if err := p.StartPod(ctx, ns, kubetest.PodSpec{Name: "o-new", Labels: simLabels}, s.ip); err != nil {
		t.Fatal(err)
	}
	caughtUp := time.Now()
	eventually(t, 90*time.Second, "the cell caught up", func() (bool, string) {
		st := tc.c.PodSet().Load()
		return !st.Has("o-0") && st.Has("o-1") && !st.Routable("o-1") && st.Routable("o-new") && st.Routable("o-2"), state(st)
	})
	t.Logf("caught up %v after the changes", time.Since(caughtUp).Round(time.Millisecond))
	eventually(t, 30*time.Second, "the new pod receives traffic", func() (bool, string) {
		n, _ := s.received()
		return n > 0, fmt.Sprint(n)
	})
	checkNoLateRequests(t, tc, sims["o-0"])
	checkNoLateRequests(t, tc, sims["o-1"])
}
