package enginemetrics

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func testConfig() Config {
	c := DefaultConfig()
	c.Timeout = 2 * time.Second // generous: a loaded 2-core machine
	c.StaleAfter = 2 * time.Second
	return c
}

func TestScraperRound(t *testing.T) {
	var page atomic.Value
	page.Store(vllmPage)
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(page.Load().(string)))
	}))
	defer good.Close()
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer broken.Close()
	garbled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("vllm:num_requests_waiting oops\n"))
	}))
	defer garbled.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	clock := &fakeClock{t: time.Unix(1000, 0)}
	targets := []Target{
		{Pod: "good", URL: good.URL + "/metrics"},
		{Pod: "broken", URL: broken.URL + "/metrics"},
		{Pod: "garbled", URL: garbled.URL + "/metrics"},
		{Pod: "closed", URL: closedURL + "/metrics"},
	}
	var mu sync.Mutex
	errs := map[string]error{}
	rounds := 0
	s, err := NewScraper(testConfig(), good.Client(), func() []Target { return targets }, clock.now, Hooks{
		Scraped: func(pod string, err error, _ time.Duration) { mu.Lock(); errs[pod] = err; mu.Unlock() },
		Round:   func(View, time.Duration) { rounds++ },
		RouterLoad: func(pod string) (int, int) {
			if pod == "good" {
				return 3, 42
			}
			return 0, 0
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Round(context.Background())
	v := s.View()
	snap, fresh := v.Load("good")
	if !fresh || snap.Waiting != 5 || snap.Running != 5 || snap.KVUsage != 0.375 || snap.CapacityTokens != 32000 {
		t.Fatalf("good: %+v fresh %v, want the page's reading, fresh", snap, fresh)
	}
	if snap.RouterRequests != 3 || snap.RouterBlocks != 42 {
		t.Fatalf("good: router load at the scrape %d, %d; want 3, 42 from the hook", snap.RouterRequests, snap.RouterBlocks)
	}
	for _, pod := range []string{"broken", "garbled", "closed"} {
		snap, fresh := v.Load(pod)
		if fresh || snap == nil || snap.Err == "" || snap.Failures != 1 {
			t.Errorf("%s: %+v fresh %v, want a failure, not fresh", pod, snap, fresh)
		}
		if errs[pod] == nil {
			t.Errorf("%s: hook saw no error", pod)
		}
	}
	if !errors.Is(errs["broken"], ErrStatus) || !errors.Is(errs["garbled"], ErrParse) {
		t.Errorf("errors: broken %v, garbled %v; want ErrStatus, ErrParse", errs["broken"], errs["garbled"])
	}
	if _, fresh := v.Load("unknown"); fresh {
		t.Error("a pod never scraped is fresh")
	}

	// The good pod starts failing: its last reading stays until stale.
	page.Store("vllm:num_requests_waiting {\n")
	clock.add(time.Second)
	s.Round(context.Background())
	snap, fresh = s.View().Load("good")
	if !fresh || snap.Waiting != 5 || snap.Failures != 1 || snap.Err == "" {
		t.Fatalf("good, failing once: %+v fresh %v; want the old reading, fresh, the error", snap, fresh)
	}
	clock.add(1500 * time.Millisecond)
	if _, fresh = s.View().Load("good"); fresh {
		t.Fatal("good: fresh 2.5 s after its last good scrape, stale_after 2 s")
	}
	// It recovers.
	page.Store(sglangPage)
	s.Round(context.Background())
	snap, fresh = s.View().Load("good")
	if !fresh || snap.Engine != EngineSGLang || snap.Running != 7 || snap.Failures != 0 || snap.Err != "" {
		t.Fatalf("good, recovered: %+v fresh %v", snap, fresh)
	}
	// A pod that leaves the targets leaves the view.
	targets = targets[:1]
	s.Round(context.Background())
	if snap, _ := s.View().Load("broken"); snap != nil {
		t.Fatalf("broken after it left: %+v, want none", snap)
	}
	if rounds != 4 {
		t.Fatalf("Round hook ran %d times, want 4", rounds)
	}
}

// TestScraperBoundsConcurrency checks that a round has at most Concurrency
// scrapes in flight, and that a scrape past its timeout fails.
func TestScraperBoundsConcurrency(t *testing.T) {
	var inflight, peak atomic.Int32
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if r.URL.Query().Get("slow") != "" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		_, _ = w.Write([]byte(sglangPage))
	}))
	defer srv.Close()
	defer close(release)
	cfg := testConfig()
	cfg.Concurrency = 3
	var targets []Target
	for i := range 20 {
		targets = append(targets, Target{Pod: string(rune('a' + i)), URL: srv.URL + "/metrics"})
	}
	s, err := NewScraper(cfg, srv.Client(), func() []Target { return targets }, nil, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	s.Round(context.Background())
	if p := peak.Load(); p > 3 || p < 1 {
		t.Fatalf("peak scrapes in flight = %d, want 1..3", p)
	}
	n := 0
	s.View().Pods(func(_ string, _ *Snapshot, fresh bool) {
		if fresh {
			n++
		}
	})
	if n != 20 {
		t.Fatalf("%d fresh pods, want 20", n)
	}
	cfg.Timeout = 50 * time.Millisecond
	slow, err := NewScraper(cfg, srv.Client(), func() []Target { return []Target{{Pod: "slow", URL: srv.URL + "/metrics?slow=1"}} }, nil, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	slow.Round(context.Background())
	if snap, fresh := slow.View().Load("slow"); fresh || snap == nil || snap.Err == "" {
		t.Fatalf("slow pod: %+v fresh %v, want a timeout", snap, fresh)
	}
}

// TestScraperRunStops checks that Run scrapes repeatedly and returns when
// its context ends.
func TestScraperRunStops(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(vllmPage))
	}))
	defer srv.Close()
	cfg := testConfig()
	cfg.Interval = 10 * time.Millisecond
	s, err := NewScraper(cfg, srv.Client(), func() []Target { return []Target{{Pod: "p", URL: srv.URL}} }, nil, Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for hits.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("%d scrapes in 10 s, want 3", hits.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}
