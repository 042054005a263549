package cell

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// gatedPod is a pod whose first inference requests do not answer until
// the test opens their gates (one each, in order); it records the order
// in which requests arrived and gates opened.
type gatedPod struct {
	srv   *httptest.Server
	gates []chan struct{}

	mu     sync.Mutex
	events []string // "req", "gate"
	served int      // requests arrived
	opened int      // gates opened
}

func newGatedPod(t *testing.T, gates int) *gatedPod {
	t.Helper()
	p := &gatedPod{}
	for range gates {
		p.gates = append(p.gates, make(chan struct{}))
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			if r.URL.Path == "/v1/models" {
				fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model","created":1700000000,"owned_by":"a"}]}`)
			}
			return
		}
		io.Copy(io.Discard, r.Body)
		p.mu.Lock()
		n := p.served
		p.served++
		p.events = append(p.events, "req")
		p.mu.Unlock()
		if n < len(p.gates) {
			<-p.gates[n]
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"c","object":"text_completion","model":"m","choices":[{"text":"x"}],"usage":{"prompt_tokens":64,"completion_tokens":1}}`)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// open opens the next gate.
func (p *gatedPod) open() {
	p.mu.Lock()
	p.events = append(p.events, "gate")
	g := p.gates[p.opened]
	p.opened++
	p.mu.Unlock()
	close(g)
}

// arrived returns the requests that reached the pod.
func (p *gatedPod) arrived() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

func (p *gatedPod) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.events...)
}

// TestPrefixWaitHoldsFollowUp sends a prompt and, while the pod is still
// prefilling it (no first token), a follow-up that extends it: with the
// prefix wait on, the follow-up reaches the pod only after the first
// prompt's prefill ended, and the wait is counted as "stored"; off, it
// goes at once. A pod without KV events (the approximate index, whose
// learned depth counts the first prompt's speculative blocks as held)
// waits alike.
func TestPrefixWaitHoldsFollowUp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		on     bool
		events string
	}{{"enabled", true, ""}, {"disabled", false, ""}, {"enabled, no events", true, PodEventsNone}} {
		on := tc.on
		t.Run(tc.name, func(t *testing.T) {
			pod := newGatedPod(t, 1)
			cfg := testConfig()
			cfg.Pods = []PodConfig{{ID: "a", Address: strings.TrimPrefix(pod.srv.URL, "http://"), KVBlocks: 10000, Events: tc.events}}
			cfg.Routing.PrefixWait = PrefixWaitConfig{Enabled: on, MaxWait: time.Minute}
			// A slow engine model, so that the bound (the prefill of the
			// blocks gained) outlasts the test.
			cfg.Routing.Cost.PrefillPerTokenUs = 1e5
			c := startCell(t, cfg)
			base := "http://" + c.HTTPAddr()
			waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })

			first := promptTokens(1)
			followUp := append(append([]uint32(nil), first...), promptTokens(2)[:256]...)
			done := make(chan int, 2)
			go func() {
				resp, _ := completion(t, base, first, false, nil)
				done <- resp.StatusCode
			}()
			waitFor(t, "the first prompt at the pod", func() bool { return len(pod.log()) == 1 })
			go func() {
				resp, _ := completion(t, base, followUp, false, nil)
				done <- resp.StatusCode
			}()
			if on {
				waitFor(t, "the follow-up to wait", func() bool { return c.router.prefixWaiting.Load() == 1 })
			} else {
				waitFor(t, "the follow-up at the pod", func() bool { return len(pod.log()) == 2 })
			}
			pod.open()
			for range 2 {
				select {
				case code := <-done:
					if code != http.StatusOK {
						t.Fatalf("status %d, want 200", code)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("requests did not finish")
				}
			}
			want := []string{"req", "gate", "req"}
			if !on {
				want = []string{"req", "req", "gate"}
			}
			if got := pod.log(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("pod saw %v, want %v", got, want)
			}
			_, metrics := get(t, base+"/metrics")
			stored := 0
			if on {
				stored = 1
			}
			for _, w := range []string{fmt.Sprintf(`cellrouter_prefix_waits_total{cell="cell-0",outcome="stored"} %d`, stored),
				`cellrouter_prefix_waiting{cell="cell-0"} 0`} {
				if !strings.Contains(metrics, w) {
					t.Errorf("metrics lack %q", w)
				}
			}
		})
	}
}

// TestPrefixWaitChain sends three turns of one conversation, each
// extending the last, the second and third while the first is still
// prefilled: the third waits for the second (which will store more of its
// prefix), not for the first, so it does not start beside the second. A
// pod without KV events waits alike: the second turn's prefill begins
// above the first's speculative blocks, which the pod has not stored
// yet, so it is the one that stores the most of the third's prefix.
func TestPrefixWaitChain(t *testing.T) {
	for _, tc := range []struct{ name, events string }{{"events", ""}, {"no events", PodEventsNone}} {
		t.Run(tc.name, func(t *testing.T) { testPrefixWaitChain(t, tc.events) })
	}
}

func testPrefixWaitChain(t *testing.T, events string) {
	pod := newGatedPod(t, 2)
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "a", Address: strings.TrimPrefix(pod.srv.URL, "http://"), KVBlocks: 10000, Events: events}}
	cfg.Routing.PrefixWait = PrefixWaitConfig{Enabled: true, MaxWait: time.Minute}
	cfg.Routing.Cost.PrefillPerTokenUs = 1e5
	c := startCell(t, cfg)
	base := "http://" + c.HTTPAddr()
	waitFor(t, "healthz", func() bool { code, _ := get(t, base+"/healthz"); return code == 200 })

	t1 := promptTokens(1)
	t2 := append(append([]uint32(nil), t1...), promptTokens(2)[:256]...)
	t3 := append(append([]uint32(nil), t2...), promptTokens(3)[:256]...)
	done := make(chan int, 3)
	send := func(toks []uint32) {
		go func() {
			resp, _ := completion(t, base, toks, false, nil)
			done <- resp.StatusCode
		}()
	}
	send(t1)
	waitFor(t, "the first turn at the pod", func() bool { return pod.arrived() == 1 })
	send(t2)
	waitFor(t, "the second turn to wait", func() bool { return c.router.prefixWaiting.Load() == 1 })
	send(t3)
	waitFor(t, "the third turn to wait", func() bool { return c.router.prefixWaiting.Load() == 2 })
	pod.open() // the first turn answers: the second goes
	waitFor(t, "the second turn at the pod", func() bool { return pod.arrived() >= 2 })
	pod.open() // the second answers: the third goes
	for range 3 {
		select {
		case code := <-done:
			if code != http.StatusOK {
				t.Fatalf("status %d, want 200", code)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("requests did not finish")
		}
	}
	if got, want := strings.Join(pod.log(), ","), "req,gate,req,gate,req"; got != want {
		t.Fatalf("pod saw %s, want %s (the third turn went beside the second)", got, want)
	}
}

// TestPrefixWaitBound is the decision's table: wait for a prefill
// expected to end before the request, going at once, would have queued
// and computed the blocks it gains itself, and at most that long; not for
// one expected later, nor when nothing is gained or the wait is off.
func TestPrefixWaitBound(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		gain, bs              int
		perTokenUs            float64
		queue, remaining, max time.Duration
		want                  time.Duration
	}{
		{"100 blocks of 16 at 25us, a free slot, the prefill about to end", 100, 16, 25, 0, 10 * time.Millisecond, 5 * time.Second, 40 * time.Millisecond},
		{"one block, the prefill ending now", 1, 16, 25, 0, 0, 5 * time.Second, 400 * time.Microsecond},
		{"the prefill ends after the blocks would be computed", 100, 16, 25, 0, 41 * time.Millisecond, 5 * time.Second, 0},
		{"the same, behind a queue it would wait for anyway", 100, 16, 25, 200 * time.Millisecond, 41 * time.Millisecond, 5 * time.Second, 240 * time.Millisecond},
		{"a long prompt sharing a short prefix", 10, 16, 25, 0, 300 * time.Millisecond, 5 * time.Second, 0},
		{"capped", 100000, 16, 25, 0, 0, 5 * time.Second, 5 * time.Second},
		{"queue capped", 100, 16, 25, time.Minute, 0, 5 * time.Second, 5 * time.Second},
		{"nothing gained", 0, 16, 25, time.Second, 0, 5 * time.Second, 0},
		{"off", 100, 16, 25, 0, 0, 0, 0},
		{"no prefill cost", 100, 16, 0, 0, 0, 5 * time.Second, 0},
	} {
		if got := PrefixWaitBound(tc.gain, tc.bs, tc.perTokenUs, tc.queue, tc.remaining, tc.max); got != tc.want {
			t.Errorf("%s: PrefixWaitBound(%d, %d, %v, queue %v, remaining %v, %v) = %v, want %v", tc.name, tc.gain, tc.bs, tc.perTokenUs, tc.queue, tc.remaining, tc.max, got, tc.want)
		}
	}
	for _, tc := range []struct {
		work    int
		elapsed time.Duration
		want    time.Duration
	}{{100, 0, 40 * time.Millisecond}, {100, 30 * time.Millisecond, 10 * time.Millisecond}, {100, time.Second, 0}} {
		if got := PrefixRemaining(tc.work, 16, 25, tc.elapsed); got != tc.want {
			t.Errorf("PrefixRemaining(%d blocks, 16, 25us, %v) = %v, want %v", tc.work, tc.elapsed, got, tc.want)
		}
	}
}

// TestPrefixWaitConfigValidate checks that a negative max_wait is refused
// with the field and value named, and that the defaults pass.
func TestPrefixWaitConfigValidate(t *testing.T) {
	cfg := testConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cfg.Routing.PrefixWait.MaxWait = -time.Second
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "routing.prefix_wait.max_wait") || !strings.Contains(err.Error(), "-1s") {
		t.Fatalf("max_wait -1s: got %v, want an error naming routing.prefix_wait.max_wait = -1s", err)
	}
}

// TestBindPrefixWaitFlags checks that the flags override the config only
// when given.
func TestBindPrefixWaitFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want PrefixWaitConfig
	}{
		{nil, PrefixWaitConfig{Enabled: true, MaxWait: 7 * time.Second}},
		{[]string{"--prefix-wait=false"}, PrefixWaitConfig{Enabled: false, MaxWait: 7 * time.Second}},
		{[]string{"--prefix-wait-max", "2s"}, PrefixWaitConfig{Enabled: true, MaxWait: 2 * time.Second}},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		apply := BindPrefixWaitFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got := PrefixWaitConfig{Enabled: true, MaxWait: 7 * time.Second} // as a config file set it
		apply(&got)
		if got != tc.want {
			t.Errorf("%v: got %+v, want %+v", tc.args, got, tc.want)
		}
	}
}
