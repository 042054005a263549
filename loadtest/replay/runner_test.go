package replay

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// testConfig returns a config for srv with a generous timeout.
func testConfig(target string) Config {
	c := DefaultConfig()
	c.Target = target
	c.Timeout = 30 * time.Second
	return c
}

func TestRunStreamed(t *testing.T) {
	srv := fakeOpenAI(t)
	// Prefill takes 20ms per block, so TTFT grows with the block count.
	recs := []trace.Record{rec(0, 1, 4), rec(0, 4, 4), rec(0, 8, 4)}
	recs[0].InputLength = 300 // a partial last block
	out, err := Run(context.Background(), testConfig(srv.URL), recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out.Results {
		if !r.OK() {
			t.Fatalf("request %d got error %s (%s), want success", i, r.Err, r.Detail)
		}
		if r.CompletionTokens != 4 || len(r.ITL) != 3 {
			t.Errorf("request %d got %d tokens and %d gaps, want 4 and 3", i, r.CompletionTokens, len(r.ITL))
		}
		if r.PromptTokens != recs[i].InputLength || r.CachedTokens != recs[i].InputLength/2 || !r.UsageReported {
			t.Errorf("request %d got prompt %d cached %d, want %d and %d", i, r.PromptTokens, r.CachedTokens, recs[i].InputLength, recs[i].InputLength/2)
		}
		if want := time.Duration(recs[i].InputLength/trace.TokensPerID) * 20 * time.Millisecond; r.TTFT < want {
			t.Errorf("request %d got TTFT %v, want at least the prefill %v", i, r.TTFT, want)
		}
		if r.E2E < r.TTFT {
			t.Errorf("request %d got E2E %v < TTFT %v", i, r.E2E, r.TTFT)
		}
	}
	// 160ms of prefill against 80ms: the order survives a loaded machine.
	if a, b := out.Results[1].TTFT, out.Results[2].TTFT; a >= b {
		t.Errorf("got TTFT %v for 4 blocks and %v for 8, want the longer prompt slower", a, b)
	}
	if got := []string{out.Results[0].Pod, out.Results[1].Pod}; got[0] != "pod-0" || got[1] != "pod-0" {
		t.Errorf("got pods %v, want pod-0 (blocks 0 and 4, even)", got)
	}
}

func TestRunNotStreamed(t *testing.T) {
	srv := fakeOpenAI(t)
	cfg := testConfig(srv.URL)
	cfg.Stream = false
	out, err := Run(context.Background(), cfg, []trace.Record{rec(0, 3, 7)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := out.Results[0]
	if !r.OK() || !r.UsageReported || r.CompletionTokens != 7 || r.Pod != "pod-1" {
		t.Fatalf("got %+v, want success with usage, 7 tokens, pod-1", r)
	}
	if r.TTFT < 60*time.Millisecond || r.TTFT > r.E2E || len(r.ITL) != 0 {
		t.Errorf("got TTFT %v E2E %v ITL %v, want TTFT >= 60ms, <= E2E, no gaps", r.TTFT, r.E2E, r.ITL)
	}
}

func TestRunErrorKinds(t *testing.T) {
	srv := fakeOpenAI(t)
	cfg := testConfig(srv.URL)
	cfg.Timeout = 500 * time.Millisecond
	tests := []struct {
		maxTokens int
		want      ErrorKind
	}{
		{5, ErrNone},
		{tok4xx, ErrHTTP4xx},
		{tok5xx, ErrHTTP5xx},
		{tokSlow, ErrTimeout},
		{tokBroken, ErrStreamBroken},
		{tokBadJSON, ErrStreamBroken},
		{tokHangup, ErrConnect},
	}
	var recs []trace.Record
	for _, tt := range tests {
		recs = append(recs, rec(0, 1, tt.maxTokens))
	}
	out, err := Run(context.Background(), cfg, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		if got := out.Results[i].Err; got != tt.want {
			t.Errorf("max_tokens %d got kind %q (%s), want %q", tt.maxTokens, got, out.Results[i].Detail, tt.want)
		}
	}
	if got := out.Results[1].Status; got != http.StatusBadRequest {
		t.Errorf("4xx got status %d, want 400", got)
	}
}

func TestRunConcurrencyCap(t *testing.T) {
	var inflight, most atomic.Int64
	inner := fakeOpenAI(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		resp, err := http.Post(inner.URL+r.URL.Path, "application/json", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "text/event-stream")
		buf := make([]byte, 4096)
		for {
			k, err := resp.Body.Read(buf)
			w.Write(buf[:k])
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Concurrency = 1
	// Four requests due at once, each holding the only slot for 100ms.
	recs := []trace.Record{rec(0, 5, 2), rec(0, 5, 2), rec(0, 5, 2), rec(0, 5, 2)}
	out, err := Run(context.Background(), cfg, recs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := most.Load(); got != 1 {
		t.Errorf("got %d requests in flight at once, want 1", got)
	}
	if out.Delayed < 1 || out.Delayed > 3 {
		t.Errorf("got %d delayed, want 1..3", out.Delayed)
	}
	for i, r := range out.Results {
		if !r.OK() {
			t.Errorf("request %d got %s (%s), want success", i, r.Err, r.Detail)
		}
	}
}

func TestRunKeepsSchedule(t *testing.T) {
	srv := fakeOpenAI(t)
	cfg := testConfig(srv.URL)
	cfg.TimeScale = 0.5 // 600ms in the trace is 300ms here
	out, err := Run(context.Background(), cfg, []trace.Record{rec(1000, 1, 2), rec(1600, 1, 2)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Results[1].Sent - out.Results[0].Sent; got < 290*time.Millisecond {
		t.Errorf("got the second request %v after the first, want about 300ms", got)
	}
	if got := out.Results[1].Scheduled; got != 300*time.Millisecond {
		t.Errorf("got scheduled %v, want 300ms", got)
	}
}

func TestRunUnreachable(t *testing.T) {
	addr := servertest.RefusedAddr(t)
	_, err := Run(context.Background(), testConfig("http://"+addr), []trace.Record{rec(0, 1, 1)}, nil)
	if err == nil || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), addr) {
		t.Errorf("got error %v, want one saying %s is unreachable", err, addr)
	}
}

func TestRunCancelled(t *testing.T) {
	srv := fakeOpenAI(t)
	ctx, cancel := context.WithCancel(context.Background())
	obs := &cancelAfter{n: 1, cancel: cancel}
	// The second request is due an hour later: cancelling must not wait.
	out, err := Run(ctx, testConfig(srv.URL), []trace.Record{rec(0, 1, 2), rec(3_600_000, 1, 2)}, obs)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Results[0].OK() {
		t.Errorf("first got %s, want success", out.Results[0].Err)
	}
	if r := out.Results[1]; r.Err != ErrCanceled || r.Sent >= 0 {
		t.Errorf("second got kind %q sent %v, want canceled and never sent", r.Err, r.Sent)
	}
}

// cancelAfter cancels the replay after n requests are done.
type cancelAfter struct {
	n      int64
	done   atomic.Int64
	cancel func()
}

func (c *cancelAfter) Sent(int) {}
func (c *cancelAfter) Done(*Result) {
	if c.done.Add(1) >= c.n {
		c.cancel()
	}
}
