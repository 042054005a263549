package auth

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func TestLimiterRate(t *testing.T) {
	ten := &Tenant{Name: "acme", Limits: Limits{RequestsPerSecond: 2, Burst: 3}}
	type step struct {
		ms        int
		wantErr   error
		wantRetry time.Duration
	}
	steps := []step{
		// A full bucket of 3 at first.
		{0, nil, 0}, {0, nil, 0}, {0, nil, 0},
		{0, ErrRateLimited, time.Second}, // empty: one token in 0.5 s, rounded up
		{499, ErrRateLimited, time.Second},
		{500, nil, 0}, // refilled one
		{500, ErrRateLimited, time.Second},
		{3000, nil, 0}, {3000, nil, 0}, {3000, nil, 0}, // refilled to the burst, no more
		{3000, ErrRateLimited, time.Second},
		{2000, ErrRateLimited, time.Second}, // the clock stepped back: no refill
		{3500, nil, 0},
	}
	l := NewLimiter()
	for i, s := range steps {
		tk, err := l.Acquire(ten, at(s.ms))
		var ae *Error
		switch {
		case s.wantErr == nil && err != nil:
			t.Fatalf("step %d at %d ms: got %v, want admitted", i, s.ms, err)
		case s.wantErr != nil && (!errors.Is(err, s.wantErr) || !errors.As(err, &ae) || ae.RetryAfter != s.wantRetry || ae.Tenant != "acme"):
			t.Fatalf("step %d at %d ms: got %v, want %v with Retry-After %v", i, s.ms, err, s.wantErr, s.wantRetry)
		}
		l.Release(tk)
	}
	if got := l.InFlight("acme"); got != 0 {
		t.Errorf("in flight after every release: got %d, want 0", got)
	}
}

func TestLimiterRetryAfterRoundsUp(t *testing.T) {
	ten := &Tenant{Name: "slow", Limits: Limits{RequestsPerSecond: 0.25, Burst: 1}}
	l := NewLimiter()
	if _, err := l.Acquire(ten, at(0)); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ten, at(1000))
	var ae *Error
	if !errors.As(err, &ae) || ae.RetryAfter != 3*time.Second {
		t.Errorf("got %v, want Retry-After 3s (a token every 4 s, 1 s gone)", err)
	}
}

func TestLimiterConcurrency(t *testing.T) {
	ten := &Tenant{Name: "acme", Limits: Limits{MaxConcurrent: 2}}
	l := NewLimiter()
	a, err1 := l.Acquire(ten, at(0))
	b, err2 := l.Acquire(ten, at(0))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := l.Acquire(ten, at(0))
	var ae *Error
	if !errors.Is(err, ErrConcurrency) || !errors.As(err, &ae) || ae.RetryAfter != ConcurrencyRetryAfter {
		t.Fatalf("third: got %v, want ErrConcurrency with Retry-After %v", err, ConcurrencyRetryAfter)
	}
	l.Release(a)
	if got := l.InFlight("acme"); got != 1 {
		t.Fatalf("in flight: got %d, want 1", got)
	}
	c, err := l.Acquire(ten, at(0))
	if err != nil {
		t.Fatalf("after a release: got %v, want admitted", err)
	}
	l.Release(b)
	l.Release(c)
	// Other tenants, a nil tenant and unlimited ones are never refused.
	other := &Tenant{Name: "other", Limits: Limits{MaxConcurrent: 1}}
	if _, err := l.Acquire(other, at(0)); err != nil {
		t.Errorf("another tenant: got %v", err)
	}
	for range 100 {
		if tk, err := l.Acquire(nil, at(0)); err != nil || tk != (Ticket{}) {
			t.Fatalf("nil tenant: got %v, %v", tk, err)
		}
		if _, err := l.Acquire(&Tenant{Name: "free"}, at(0)); err != nil {
			t.Fatalf("unlimited tenant: got %v", err)
		}
	}
}

// TestLimiterRateAndConcurrencyRefuseWithoutCost checks that a request
// refused for concurrency takes no token, and one refused for the rate no
// slot.
func TestLimiterRateAndConcurrencyRefuseWithoutCost(t *testing.T) {
	ten := &Tenant{Name: "acme", Limits: Limits{RequestsPerSecond: 1, Burst: 2, MaxConcurrent: 1}}
	l := NewLimiter()
	a, _ := l.Acquire(ten, at(0))
	for range 5 {
		if _, err := l.Acquire(ten, at(0)); !errors.Is(err, ErrConcurrency) {
			t.Fatalf("got %v, want ErrConcurrency", err)
		}
	}
	l.Release(a)
	if _, err := l.Acquire(ten, at(0)); err != nil {
		t.Fatalf("the second token was spent by refusals: %v", err)
	}
}

// TestLimiterAgainstBound drives random arrivals through the limiter and
// checks it against the token bucket's defining bound: over any interval
// of length d, at most Burst + d*rate requests are admitted, and a client
// that keeps to the rate is never refused.
func TestLimiterAgainstBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		rate := 0.5 + rng.Float64()*20
		burst := 1 + rng.IntN(10)
		ten := &Tenant{Name: "t", Limits: Limits{RequestsPerSecond: rate, Burst: burst}}
		l := NewLimiter()
		var admitted []time.Time
		now := t0
		for range 1000 {
			now = now.Add(time.Duration(rng.ExpFloat64() / (rate * 1.5) * float64(time.Second)))
			tk, err := l.Acquire(ten, now)
			if err == nil {
				admitted = append(admitted, now)
				l.Release(tk)
			}
		}
		for i := range admitted {
			for j := i; j < len(admitted); j++ {
				d := admitted[j].Sub(admitted[i]).Seconds()
				if n := j - i + 1; float64(n) > float64(burst)+d*rate+1e-9 {
					t.Fatalf("trial %d (rate %.2f, burst %d): %d admitted within %.3f s, over the bound %.2f",
						trial, rate, burst, n, d, float64(burst)+d*rate)
				}
			}
		}
		// A client at exactly the rate is always admitted.
		steady := NewLimiter()
		for k := range 200 {
			if _, err := steady.Acquire(ten, t0.Add(time.Duration(float64(k)/rate*float64(time.Second))+time.Nanosecond*time.Duration(k))); err != nil {
				t.Fatalf("trial %d: request %d at the rate refused: %v", trial, k, err)
			}
		}
	}
}

func TestLimiterForget(t *testing.T) {
	a := &Tenant{Name: "a", Limits: Limits{MaxConcurrent: 1}}
	b := &Tenant{Name: "b", Limits: Limits{MaxConcurrent: 1}}
	l := NewLimiter()
	ta, _ := l.Acquire(a, at(0))
	tb, _ := l.Acquire(b, at(0))
	l.Release(tb)
	l.Forget(func(string) bool { return false })
	if got := l.InFlight("a"); got != 1 {
		t.Errorf("a tenant with a request in flight was forgotten: in flight %d", got)
	}
	l.Release(ta)
	if _, err := l.Acquire(b, at(0)); err != nil {
		t.Errorf("b after Forget: %v", err)
	}
}

// TestLimiterDefaultConcurrency checks the default in-flight bound: it
// applies to a tenant whose key file entry sets no max_concurrent, not to
// one that sets its own (0 in the file: unlimited), and never to a limiter
// without a default.
func TestLimiterDefaultConcurrency(t *testing.T) {
	tab, err := ParseKeyFile([]byte("tenants:\n  - {name: dflt}\n  - {name: free, max_concurrent: 0}\n  - {name: own, max_concurrent: 3}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{tab.Tenant("dflt").Limits.MaxConcurrent, tab.Tenant("free").Limits.MaxConcurrent, tab.Tenant("own").Limits.MaxConcurrent}; got[0] != 0 || got[1] != -1 || got[2] != 3 {
		t.Fatalf("parsed max_concurrent (absent, 0, 3): got %v, want [0 -1 3]", got)
	}
	now := time.Unix(1_700_000_000, 0)
	admitted := func(l *Limiter, name string, n int) int {
		ok := 0
		for range n {
			if _, err := l.Acquire(tab.Tenant(name), now); err == nil {
				ok++
			}
		}
		return ok
	}
	l := NewLimiter()
	l.SetDefaultConcurrent(2)
	for _, c := range []struct {
		tenant string
		want   int
	}{{"dflt", 2}, {"free", 10}, {"own", 3}} {
		if got := admitted(l, c.tenant, 10); got != c.want {
			t.Errorf("%s with a default of 2: admitted %d of 10, want %d", c.tenant, got, c.want)
		}
	}
	if got := admitted(NewLimiter(), "dflt", 10); got != 10 {
		t.Errorf("dflt without a default: admitted %d of 10, want 10", got)
	}
}
