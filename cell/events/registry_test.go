package events

import (
	"slices"
	"testing"
	"time"
)

func TestRegistry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	// step is one input to the registry; kills is what Tick must return
	// (Tick steps only) and states the states to check after the step.
	type step struct {
		op     string // "batch", "degraded", "repaired", "health", "unhealthy", "tick"
		pod    string
		sec    int
		kills  []string
		states map[string]PodState
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"static pod starts unknown and dies silent", []step{
			{op: "tick", sec: 5, states: map[string]PodState{"s1": StateUnknown}},
			{op: "tick", sec: 11, kills: []string{"s1"}, states: map[string]PodState{"s1": StateDead}},
			{op: "tick", sec: 40, states: map[string]PodState{"s1": StateDead}},
		}},
		{"events make ready and keep alive", []step{
			{op: "batch", pod: "s1", sec: 8, states: map[string]PodState{"s1": StateReady}},
			{op: "tick", sec: 17},
			{op: "tick", sec: 19, kills: []string{"s1"}},
		}},
		{"health alone keeps alive", []step{
			{op: "health", pod: "s1", sec: 9},
			{op: "tick", sec: 18, states: map[string]PodState{"s1": StateUnknown}},
			{op: "unhealthy", pod: "s1", sec: 15},
			{op: "tick", sec: 20, kills: []string{"s1"}},
		}},
		{"gap degrades, repair restores", []step{
			{op: "batch", pod: "d1", sec: 1, states: map[string]PodState{"d1": StateReady}},
			{op: "degraded", pod: "d1", sec: 2, states: map[string]PodState{"d1": StateDegraded}},
			{op: "repaired", pod: "d1", sec: 3, states: map[string]PodState{"d1": StateReady}},
		}},
		{"dead comes back", []step{
			{op: "batch", pod: "d1", sec: 1},
			{op: "tick", sec: 12, kills: []string{"d1", "s1"}, states: map[string]PodState{"d1": StateDead}},
			{op: "health", pod: "s1", sec: 13, states: map[string]PodState{"s1": StateUnknown}},
			{op: "batch", pod: "d1", sec: 14, states: map[string]PodState{"d1": StateReady}},
			{op: "tick", sec: 20},
		}},
		{"discovered dead pod is forgotten", []step{
			{op: "batch", pod: "d1", sec: 1},
			{op: "health", pod: "s1", sec: 1},
			{op: "tick", sec: 12, kills: []string{"d1", "s1"}},
			{op: "tick", sec: 23, states: map[string]PodState{"s1": StateDead, "d1": 99}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.DeadAfter = 10 * time.Second
			cfg.Pods = []PodSpec{{ID: "s1", Address: "10.0.0.1:8000", Role: RolePrefill}}
			r, err := NewRegistry(cfg, t0)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				now := at(s.sec)
				switch s.op {
				case "batch":
					r.ObserveBatch(s.pod, s.pod, 3, uint64(i), true, false, now)
				case "degraded":
					r.ObserveBatch(s.pod, s.pod, 3, uint64(i), false, true, now)
				case "repaired":
					r.SetDegraded(s.pod, s.pod, false)
				case "health":
					r.ObserveHealth(s.pod, true, now)
				case "unhealthy":
					r.ObserveHealth(s.pod, false, now)
				case "tick":
					if got := r.Tick(now); !slices.Equal(got, s.kills) {
						t.Fatalf("step %d: got kills %v, want %v", i, got, s.kills)
					}
				}
				for pod, want := range s.states {
					got, ok := r.State(pod)
					if want == 99 {
						if ok {
							t.Fatalf("step %d: pod %s: got state %v, want forgotten", i, pod, got)
						}
						continue
					}
					if !ok || got != want {
						t.Fatalf("step %d: pod %s: got state %v (known %t), want %v", i, pod, got, ok, want)
					}
				}
			}
		})
	}
}

func TestRegistrySnapshot(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := DefaultConfig()
	cfg.Pods = []PodSpec{{ID: "s1", Address: "10.0.0.1:8000"}}
	r, err := NewRegistry(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	r.ObserveBatch("d1", "d1#1", 7, 42, true, false, t0.Add(time.Second))
	r.ObserveBatch("d1", "d1#0", 6, 9, true, true, t0.Add(2*time.Second))
	r.ObserveHealth("s1", false, t0)
	snap := r.Snapshot()
	if len(snap) != 2 || snap[0].ID != "d1" || snap[1].ID != "s1" {
		t.Fatalf("got pods %+v, want d1 then s1", snap)
	}
	d1, s1 := snap[0], snap[1]
	if d1.State != StateDegraded || d1.Static || d1.Role != RoleBoth || d1.Batches != 2 || !d1.LastEvent.Equal(t0.Add(2*time.Second)) {
		t.Errorf("got d1 %+v, want degraded, discovered, role both, 2 batches, last event at +2s", d1)
	}
	want := []HolderInfo{{ID: "d1#0", Slot: 6, LastSeq: 9, Degraded: true, Batches: 1}, {ID: "d1#1", Slot: 7, LastSeq: 42, Batches: 1}}
	if !slices.Equal(d1.Holders, want) {
		t.Errorf("got holders %+v, want %+v", d1.Holders, want)
	}
	if s1.State != StateUnknown || !s1.Static || s1.Role != RoleBoth || s1.Address != "10.0.0.1:8000" || s1.HealthFailures != 1 {
		t.Errorf("got s1 %+v, want unknown, static, role both, its address, 1 health failure", s1)
	}
	for _, s := range []PodState{StateUnknown, StateReady, StateDegraded, StateDead, 9} {
		if s.String() == "" {
			t.Errorf("got empty name for state %d", s)
		}
	}
}

// TestManageAndForget checks the registry's side of a discovered pod: it
// enters Unknown with its address, keeps its state and holders through an
// update, is never forgotten by Tick while managed, and goes with Forget.
func TestManageAndForget(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cfg := DefaultConfig()
	r, err := NewRegistry(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	r.Manage(PodSpec{ID: "p", Address: "127.0.0.2:8000"}, t0)
	if st, ok := r.State("p"); !ok || st != StateUnknown {
		t.Fatalf("got state %v %v, want unknown", st, ok)
	}
	r.ObserveBatch("p", "p", 3, 1, true, false, t0)
	r.Manage(PodSpec{ID: "p", Address: "127.0.0.2:8000", Role: RoleDecode}, t0)
	snap := r.Snapshot()
	if len(snap) != 1 || snap[0].State != StateReady || snap[0].Role != RoleDecode || !snap[0].Static || len(snap[0].Holders) != 1 {
		t.Fatalf("got %+v, want p ready, decode, managed, with its holder", snap)
	}
	// Dead of silence, but not forgotten: it is managed.
	if dead := r.Tick(t0.Add(cfg.DeadAfter + time.Second)); len(dead) != 1 {
		t.Fatalf("got dead %v, want p", dead)
	}
	r.Tick(t0.Add(3*cfg.DeadAfter + time.Second))
	if _, ok := r.State("p"); !ok {
		t.Fatal("a managed pod was forgotten by Tick")
	}
	if !r.Forget("p") || r.Forget("p") {
		t.Fatal("got Forget not true then false")
	}
	if _, ok := r.State("p"); ok {
		t.Fatal("got p after Forget")
	}
}

// TestManaged checks which pods the applier may accept events of when
// unknown pods are refused: managed ones (configured or discovered), not
// those known only from their events, not forgotten ones.
func TestManaged(t *testing.T) {
	var none *Registry
	if none.Managed("p") {
		t.Fatal("a nil registry manages a pod")
	}
	now := time.Unix(100, 0)
	r, err := NewRegistry(DefaultConfig(), now)
	if err != nil {
		t.Fatal(err)
	}
	r.Manage(PodSpec{ID: "found", Address: "127.0.0.2:8000"}, now)
	r.ObserveBatch("heard", "heard", 0, 1, true, false, now)
	for _, tc := range []struct {
		pod  string
		want bool
	}{{"found", true}, {"heard", false}, {"never", false}} {
		if got := r.Managed(tc.pod); got != tc.want {
			t.Errorf("Managed(%q) = %v, want %v", tc.pod, got, tc.want)
		}
	}
	r.Forget("found")
	if r.Managed("found") {
		t.Error("a forgotten pod is still managed")
	}
}
