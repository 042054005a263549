package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
)

// watchConfig is a proxy configuration with short watch bounds: a frozen
// target is found within bound + liveness.
func watchConfig(bound, idle time.Duration) Config {
	cfg := DefaultConfig()
	cfg.Watch.FirstByteTimeout = bound
	cfg.Watch.FirstByteTimeoutMax = bound
	cfg.Watch.LivenessTimeout = bound
	cfg.Watch.StreamIdleTimeout = idle
	cfg.Watch.Ejection.BaseEjectionTime = 300 * time.Millisecond
	cfg.Watch.Ejection.MaxEjectionTime = time.Second
	cfg.Watch.Ejection.MaxEjectionPercent = 50
	return cfg
}

// streamingPod answers every request with a short SSE stream (and its
// liveness path with 200).
func streamingPod(t testing.TB, hits *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		if hits != nil {
			hits.Add(1)
		}
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvent(`{"choices":[{"delta":{"content":"hi"}}]}`))
		io.WriteString(w, sseEvent(`[DONE]`))
	})
}

func TestFirstByteTimeoutRetriesSilentTarget(t *testing.T) {
	const bound = 300 * time.Millisecond
	var hits atomic.Int64
	good := NewFreezable(t, streamingPod(t, &hits))
	silent := Target{Pod: "silent", Address: servertest.SilentAddr(t)}
	p := testProxy(t, watchConfig(bound, 5*time.Second))
	var log callLog
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{silent, {Pod: "good", Address: good.Addr()}}, log.hooks())
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	start := time.Now()
	resp, err := post(ctx, f.URL+"/v1/completions", `{"stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	if err := f.nextErr(t); err != nil || resp.StatusCode != 200 || !strings.Contains(string(data), "[DONE]") {
		t.Fatalf("status %d, err %v, body %q: want the good pod's stream", resp.StatusCode, err, data)
	}
	// The silent target costs its first-byte bound and a liveness check.
	if took < bound || took > 2*bound+3*time.Second {
		t.Fatalf("request took %v, want about bound + liveness (%v) + one retry", took, 2*bound)
	}
	if st := p.WatchStats(); st.FirstByteTimeouts != 1 || st.Ejected != 1 || st.Ejections != 1 {
		t.Fatalf("stats = %+v, want one first-byte timeout and the silent target ejected", st)
	}
	// The next call skips the ejected target: it goes to the good pod first.
	code, _, _ := servertest.Do(t, http.MethodPost, f.URL+"/v1/completions", `{"stream":true}`)
	if err := f.nextErr(t); err != nil || code != 200 {
		t.Fatalf("second call: status %d, err %v", code, err)
	}
	events, _, _ := log.snapshot()
	if got := events[len(events)-3:]; got[0] != "attempt good" {
		t.Fatalf("second call's events %v, want the good pod first", got)
	}
	if st := p.WatchStats(); st.FirstByteTimeouts != 1 {
		t.Fatalf("stats = %+v: the ejected target was waited for again", st)
	}
}

// NewFreezable is servertest.NewFreezable (a short name for these tests).
func NewFreezable(t testing.TB, h http.Handler) *servertest.Freezable {
	return servertest.NewFreezable(t, h)
}

func TestFrozenTargetEjectedThenReadmitted(t *testing.T) {
	const bound = 200 * time.Millisecond
	var frozenHits, goodHits atomic.Int64
	frozen := NewFreezable(t, streamingPod(t, &frozenHits))
	good := NewFreezable(t, streamingPod(t, &goodHits))
	p := testProxy(t, watchConfig(bound, 5*time.Second))
	targets := []Target{{Pod: "frozen", Address: frozen.Addr()}, {Pod: "good", Address: good.Addr()}}
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, targets, Hooks{})
	})
	frozen.Freeze()
	if code, _, _ := servertest.Do(t, http.MethodPost, f.URL+"/v1/completions", `{}`); code != 200 {
		t.Fatalf("status %d while the first target is frozen", code)
	}
	f.nextErr(t)
	if !p.Ejected(frozen.Addr()) {
		t.Fatal("the frozen target was not ejected")
	}
	// While it stays frozen, its readmission checks fail and it stays out.
	deadline := time.Now().Add(waitTimeout)
	for p.WatchStats().Ejections < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("a frozen target's readmission check did not re-eject it: %+v", p.WatchStats())
		}
		p.Ejected(frozen.Addr()) // asks for the due check
		time.Sleep(20 * time.Millisecond)
	}
	frozen.Thaw()
	// Answering again, it is readmitted once its ejection time is over.
	deadline = time.Now().Add(waitTimeout)
	for p.Ejected(frozen.Addr()) {
		if time.Now().After(deadline) {
			t.Fatalf("the thawed target was not readmitted: %+v", p.WatchStats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := frozenHits.Load()
	if code, _, _ := servertest.Do(t, http.MethodPost, f.URL+"/v1/completions", `{}`); code != 200 {
		t.Fatalf("status %d after the thaw", code)
	}
	f.nextErr(t)
	if frozenHits.Load() != before+1 {
		t.Fatal("the readmitted target did not get the next request first")
	}
	if st := p.WatchStats(); st.Readmissions != 1 || st.Ejected != 0 {
		t.Fatalf("stats = %+v, want one readmission and none ejected", st)
	}
}

// readStream reads a response's events until the body ends, returning them
// and the read error (nil for a clean end).
func readStream(body io.Reader) ([]string, error) {
	rd := bufio.NewReader(body)
	var events []string
	for {
		ev, err := readEvent(rd)
		if strings.TrimSpace(ev) != "" {
			events = append(events, strings.TrimSpace(ev))
		}
		if err == io.EOF {
			return events, nil
		}
		if err != nil {
			return events, err
		}
	}
}

func TestMidStreamFreezeEndsWithErrorEvent(t *testing.T) {
	const bound = 300 * time.Millisecond
	var srv *servertest.Freezable
	srv = NewFreezable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvent(`{"choices":[{"delta":{"content":"a"}}]}`))
		http.NewResponseController(w).Flush()
		srv.Freeze() // the whole process stops, its liveness path too
		if srv.Gate(r) {
			io.WriteString(w, sseEvent(`[DONE]`))
		}
	}))
	p := testProxy(t, watchConfig(bound, 30*time.Second))
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{{Pod: "p", Address: srv.Addr()}}, Hooks{})
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	start := time.Now()
	resp, err := post(ctx, f.URL+"/v1/completions", `{"stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, rerr := readStream(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	ferr := f.nextErr(t)
	if !errors.Is(ferr, ErrMidStream) || !errors.Is(ferr, ErrTimeout) {
		t.Fatalf("Forward = %v, want ErrMidStream and ErrTimeout", ferr)
	}
	if len(events) != 2 || !strings.HasPrefix(events[1], `data: {"error":{`) || !strings.Contains(events[1], `"code":"upstream_stalled"`) {
		t.Fatalf("events %q (read error %v): want the chunk, then an OpenAI error event", events, rerr)
	}
	if took > 2*bound+3*time.Second {
		t.Fatalf("the stalled stream ended after %v, want about bound + liveness (%v)", took, 2*bound)
	}
	if st := p.WatchStats(); st.Stalls != 1 || st.Ejected != 1 {
		t.Fatalf("stats = %+v, want one stall and the target ejected", st)
	}
}

func TestStreamIdleTimeoutWhileAlive(t *testing.T) {
	const bound, idle = 200 * time.Millisecond, 800 * time.Millisecond
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv := NewFreezable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return // alive: the liveness path answers
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, sseEvent(`{"choices":[{"delta":{"content":"a"}}]}`))
		http.NewResponseController(w).Flush()
		select { // then nothing more
		case <-release:
		case <-r.Context().Done():
		}
	}))
	p := testProxy(t, watchConfig(bound, idle))
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{{Pod: "p", Address: srv.Addr()}}, Hooks{})
	})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	start := time.Now()
	resp, err := post(ctx, f.URL+"/v1/completions", `{"stream":true}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, _ := readStream(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	f.nextErr(t)
	if len(events) != 2 || !strings.Contains(events[1], `"code":"stream_idle_timeout"`) {
		t.Fatalf("events %q: want the chunk, then the idle timeout's error event", events)
	}
	if took < idle || took > idle+3*time.Second {
		t.Fatalf("the idle stream ended after %v, want about the idle bound %v", took, idle)
	}
}

func TestSlowNonStreamedAnswerIsNotCut(t *testing.T) {
	// A live pod generating a non-streamed answer sends nothing until the
	// end: its liveness checks pass, so the first-byte bound does not cut it.
	const bound = 150 * time.Millisecond
	var checks atomic.Int64
	srv := NewFreezable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			checks.Add(1)
			return
		}
		time.Sleep(8 * bound) // the generation
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"text":"done"}]}`)
	}))
	p := testProxy(t, watchConfig(bound, 5*time.Second))
	f := newFront(t, func(w http.ResponseWriter, r *http.Request, body []byte) error {
		return p.Forward(w, r, body, []Target{{Pod: "p", Address: srv.Addr()}, refusedTarget(t)}, Hooks{})
	})
	code, _, body := servertest.Do(t, http.MethodPost, f.URL+"/v1/completions", `{}`)
	if err := f.nextErr(t); err != nil || code != 200 || !strings.Contains(body, "done") {
		t.Fatalf("status %d, err %v, body %q: want the slow answer", code, err, body)
	}
	if checks.Load() == 0 {
		t.Fatal("no liveness check was made while the answer was slow")
	}
	if st := p.WatchStats(); st.FirstByteTimeouts != 0 || st.Ejected != 0 {
		t.Fatalf("stats = %+v: a live slow pod was taken for frozen", st)
	}
}

func TestFirstByteBoundAdapts(t *testing.T) {
	b := newFirstByteBounds(WatchConfig{FirstByteTimeout: time.Second, FirstByteFactor: 3, FirstByteTimeoutMax: 10 * time.Second})
	if got := b.bound("a"); got != time.Second {
		t.Fatalf("bound with no samples = %v, want the floor", got)
	}
	for range ttftSamples + ttftRecompute { // the bound lags by up to ttftRecompute samples
		b.observe("a", 2*time.Second)
	}
	if got := b.bound("a"); got != 6*time.Second {
		t.Fatalf("bound = %v, want 3 x p99 = 6s", got)
	}
	for range ttftSamples + ttftRecompute { // the bound lags by up to ttftRecompute samples
		b.observe("a", 10*time.Second)
	}
	if got := b.bound("a"); got != 10*time.Second {
		t.Fatalf("bound = %v, want the cap", got)
	}
	for range ttftSamples + ttftRecompute { // the bound lags by up to ttftRecompute samples
		b.observe("a", time.Millisecond)
	}
	if got := b.bound("a"); got != time.Second {
		t.Fatalf("bound = %v, want the floor", got)
	}
	if got := b.bound("b"); got != time.Second {
		t.Fatalf("another target's bound = %v, want the floor", got)
	}
}

func TestP99MatchesSortedReference(t *testing.T) {
	for n := 1; n <= 300; n += 7 {
		s := make([]time.Duration, n)
		for i := range s {
			s[i] = time.Duration((i * 7919) % 1000)
		}
		// Reference: the smallest value with at least 99% of samples at or
		// below it.
		var want time.Duration
		for _, c := range s {
			le := 0
			for _, d := range s {
				if d <= c {
					le++
				}
			}
			if le*100 >= 99*n && (want == 0 || c < want) {
				want = c
			}
		}
		if got := p99(s); got != want {
			t.Fatalf("n=%d: p99 = %v, want %v", n, got, want)
		}
	}
}

func TestLivenessChecksShareOneRequest(t *testing.T) {
	var checks atomic.Int64
	release := make(chan struct{})
	srv := NewFreezable(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		checks.Add(1)
		<-release // every caller waits on the one check in flight
	}))
	cfg := watchConfig(waitTimeout, waitTimeout) // an outcome stays fresh for 10s
	cfg.Watch.LivenessTimeout = waitTimeout
	p := testProxy(t, cfg)
	const callers = 8
	results := make(chan bool, callers)
	for range callers {
		go func() {
			ok, _ := p.live.alive(nil, srv.Addr())
			results <- ok
		}()
	}
	deadline := time.Now().Add(waitTimeout)
	for checks.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no liveness request was made")
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	for range callers {
		select {
		case ok := <-results:
			if !ok {
				t.Fatal("a live target was reported dead")
			}
		case <-time.After(waitTimeout):
			t.Fatal("a caller did not get the shared check's outcome")
		}
	}
	// The outcome stays fresh for half the bound: no new request.
	if ok, _ := p.live.alive(nil, srv.Addr()); !ok || checks.Load() != 1 {
		t.Fatalf("%d liveness requests for %d concurrent callers and a fresh one, want 1", checks.Load(), callers+1)
	}
	// A caller that stops waiting returns at once, stopped.
	stop := make(chan struct{})
	close(stop)
	if _, stopped := p.live.alive(stop, servertest.SilentAddr(t)); !stopped {
		t.Fatal("a stopped wait did not say so")
	}
}
