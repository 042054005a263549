package proxy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"
)

// fakeClock is an injected clock tests move by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestEjectorTimeoutEjectsAtOnceAndGrows(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	cfg := EjectionConfig{ConsecutiveFailures: 3, BaseEjectionTime: time.Second, MaxEjectionTime: 3 * time.Second, MaxEjectionPercent: 100}
	e := NewEjector(cfg, clk.now)
	if !e.Failure("a", true) || !e.Ejected("a") {
		t.Fatal("a timeout did not eject at once")
	}
	if e.Due("a") {
		t.Fatal("due before the ejection time is over")
	}
	clk.advance(time.Second)
	if !e.Due("a") || e.Due("a") {
		t.Fatal("want one due check once the base ejection time is over")
	}
	if !e.Failure("a", true) { // the check failed: ejected again, 2 s
		t.Fatal("a failed check readmitted the target")
	}
	clk.advance(1999 * time.Millisecond)
	if e.Due("a") {
		t.Fatal("second ejection is not twice as long")
	}
	clk.advance(time.Millisecond)
	if !e.Due("a") {
		t.Fatal("second ejection did not end after 2 base times")
	}
	if !e.Success("a") || e.Ejected("a") {
		t.Fatal("an answer did not readmit the target")
	}
	st := e.Stats()
	if st.Ejections != 2 || st.Readmissions != 1 || st.Ejected != 0 {
		t.Fatalf("stats = %+v, want 2 ejections, 1 readmission, 0 ejected", st)
	}
}

func TestEjectorConsecutiveFailures(t *testing.T) {
	e := NewEjector(EjectionConfig{ConsecutiveFailures: 3, BaseEjectionTime: time.Second, MaxEjectionTime: time.Minute, MaxEjectionPercent: 50}, nil)
	e.Failure("a", false)
	e.Failure("a", false)
	e.Success("a") // the run is broken
	e.Failure("a", false)
	e.Failure("a", false)
	if e.Ejected("a") {
		t.Fatal("ejected after two failures in a row")
	}
	if !e.Failure("a", false) {
		t.Fatal("three failures in a row did not eject")
	}
}

func TestEjectorDisabled(t *testing.T) {
	e := NewEjector(EjectionConfig{}, nil)
	if e.Failure("a", true) || e.Ejected("a") || e.Rank(3, func(int) string { return "a" }) != nil {
		t.Fatal("a disabled ejector ejected")
	}
}

// naiveEjector is the reference model: it keeps every event of every key
// and replays them to answer.
type naiveEjector struct {
	cfg    EjectionConfig
	events map[string][]naiveEvent
}

type naiveEvent struct {
	at   time.Time
	kind string // "fail", "timeout", "ok", "due"
}

// state replays key's events.
func (n *naiveEjector) state(key string) (ejected bool, until time.Time, checking bool, ejections int) {
	failures := 0
	var since time.Time
	for _, ev := range n.events[key] {
		switch ev.kind {
		case "fail", "timeout":
			checking = false
			failures++
			if ejected {
				if !ev.at.Before(until) {
					ejections++
					until = ev.at.Add(min(time.Duration(ejections)*n.cfg.BaseEjectionTime, n.cfg.MaxEjectionTime))
				}
				continue
			}
			if ev.kind == "timeout" || failures >= n.cfg.ConsecutiveFailures {
				if ejections > 0 && ev.at.Sub(since) >= n.cfg.BaseEjectionTime {
					ejections = 0
				}
				ejections++
				ejected = true
				until = ev.at.Add(min(time.Duration(ejections)*n.cfg.BaseEjectionTime, n.cfg.MaxEjectionTime))
			}
		case "ok":
			failures, checking = 0, false
			if ejected {
				ejected = false
				since = ev.at
			}
		case "due":
			if ejected && !checking && !ev.at.Before(until) {
				checking = true
			}
		}
	}
	return ejected, until, checking, ejections
}

func (n *naiveEjector) rank(keys []string) []int {
	type ej struct {
		i     int
		until time.Time
	}
	var out []ej
	for i, k := range keys {
		if e, u, _, _ := n.state(k); e {
			out = append(out, ej{i, u})
		}
	}
	budget := len(keys) * n.cfg.MaxEjectionPercent / 100
	if len(out) == 0 || budget == 0 || len(keys) < 2 {
		return nil
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].until.Before(out[b].until) })
	if len(out) > budget {
		out = out[len(out)-budget:]
	}
	back := map[int]bool{}
	for _, e := range out {
		back[e.i] = true
	}
	var perm []int
	for i := range keys {
		if !back[i] {
			perm = append(perm, i)
		}
	}
	for i := range keys {
		if back[i] {
			perm = append(perm, i)
		}
	}
	return perm
}

func TestEjectorMatchesNaiveModel(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 7))
		cfg := EjectionConfig{ConsecutiveFailures: 1 + rng.IntN(4), BaseEjectionTime: time.Second, MaxEjectionTime: time.Duration(1+rng.IntN(5)) * time.Second,
			MaxEjectionPercent: []int{0, 25, 50, 100}[rng.IntN(4)]}
		clk := &fakeClock{t: time.Unix(0, 0)}
		e := NewEjector(cfg, clk.now)
		n := &naiveEjector{cfg: cfg, events: map[string][]naiveEvent{}}
		keys := []string{"a", "b", "c", "d", "e"}
		for step := range 1000 {
			k := keys[rng.IntN(len(keys))]
			var kind string
			switch x := rng.IntN(10); {
			case x < 3:
				kind = "fail"
				e.Failure(k, false)
			case x < 4:
				kind = "timeout"
				e.Failure(k, true)
			case x < 7:
				kind = "ok"
				e.Success(k)
			case x < 8:
				kind = "due"
				e.Due(k)
			default:
				clk.advance(time.Duration(rng.IntN(1500)) * time.Millisecond)
			}
			if kind != "" {
				n.events[k] = append(n.events[k], naiveEvent{at: clk.t, kind: kind})
			}
			ejected := 0
			for _, k := range keys {
				want, _, _, _ := n.state(k)
				if got := e.Ejected(k); got != want {
					t.Fatalf("seed %d step %d: Ejected(%s) = %v, model %v", seed, step, k, got, want)
				}
				if want {
					ejected++
				}
			}
			if got := e.Stats().Ejected; got != ejected {
				t.Fatalf("seed %d step %d: Stats().Ejected = %d, model %d", seed, step, got, ejected)
			}
			sub := keys[:1+rng.IntN(len(keys))]
			got := e.Rank(len(sub), func(i int) string { return sub[i] })
			if want := n.rank(sub); !slices.Equal(got, want) {
				t.Fatalf("seed %d step %d: Rank(%v) = %v, model %v (cfg %+v)", seed, step, sub, got, want, cfg)
			}
		}
	}
}

func TestEjectionConfigValidate(t *testing.T) {
	for _, c := range []EjectionConfig{
		{ConsecutiveFailures: -1},
		{ConsecutiveFailures: 1, BaseEjectionTime: 0, MaxEjectionTime: time.Second},
		{ConsecutiveFailures: 1, BaseEjectionTime: 2 * time.Second, MaxEjectionTime: time.Second},
		{MaxEjectionPercent: 101},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := DefaultEjectionConfig().Validate(); err != nil {
		t.Error(err)
	}
}

func BenchmarkRankNoneEjected(b *testing.B) {
	e := NewEjector(DefaultEjectionConfig(), nil)
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("10.0.0.%d:8000", i)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.Rank(len(keys), func(i int) string { return keys[i] })
	}
}
