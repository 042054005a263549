package enginesim

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/api/openai"
)

// TestQueueingAndCancellation fills a running batch of one with a stream
// that would decode for hours, queues two requests behind it, and checks
// that a queued client that goes away leaves the queue, that the stream's
// client going away frees the slot at once, and that the queue is served
// in order with its waiting time reported.
func TestQueueingAndCancellation(t *testing.T) {
	cfg := testConfig()
	cfg.MaxRunning = 1
	cfg.TimeScale = 1
	cfg.PrefillPerToken = 0
	cfg.DecodePerToken = time.Hour
	p := startPod(t, cfg)
	stats := func() string { return fmt.Sprintf("%+v", p.Stats()) }

	// A: a stream holding the only slot after its first token.
	actx, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	req, _ := http.NewRequestWithContext(actx, http.MethodPost, p.URL()+openai.PathCompletions,
		strings.NewReader(`{"prompt":[300,301,302],"max_tokens":3,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data: {") {
		t.Fatalf("stream A: got first line %q (%v), want a data chunk", line, err)
	}
	waitFor(t, stats, func() bool { return p.Stats().Running == 1 })

	// B waits behind A; C waits behind B, then goes away.
	bDone := make(chan reply, 1)
	go func() { bDone <- postNoFatal(context.Background(), p, `{"prompt":[400,401],"max_tokens":1}`) }()
	waitFor(t, stats, func() bool { return p.Stats().Waiting == 1 })
	cctx, cancelC := context.WithCancel(context.Background())
	cDone := make(chan reply, 1)
	go func() { cDone <- postNoFatal(cctx, p, `{"prompt":[500,501],"max_tokens":1}`) }()
	waitFor(t, stats, func() bool { return p.Stats().Waiting == 2 })
	m := string(get(t, p, PathMetrics).body)
	for _, want := range []string{`vllm:num_requests_running{model_name="enginesim",engine="0"} 1`, `vllm:num_requests_waiting{model_name="enginesim",engine="0"} 2`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics with a full batch: want %q in\n%s", want, m)
		}
	}
	cancelC()
	<-cDone
	waitFor(t, stats, func() bool { s := p.Stats(); return s.Waiting == 1 && s.Cancelled == 1 && s.Running == 1 })

	// A's client goes away: B gets the slot and completes.
	start := time.Now()
	cancelA()
	var b reply
	select {
	case b = <-bDone:
	case <-time.After(waitTimeout):
		t.Fatalf("B still waiting %v after A's client went away: %s", waitTimeout, stats())
	}
	if b.status != http.StatusOK {
		t.Fatalf("B: got status %d (%s), want 200", b.status, b.body)
	}
	if q, _ := strconv.ParseFloat(b.header.Get(HeaderQueueMs), 64); q <= 0 {
		t.Errorf("B: got %s %q, want > 0", HeaderQueueMs, b.header.Get(HeaderQueueMs))
	}
	t.Logf("B completed %v after A's cancellation", time.Since(start))
	waitFor(t, stats, func() bool {
		s := p.Stats()
		return s.Running == 0 && s.Waiting == 0 && s.Cancelled == 2 && s.Requests == 1
	})
}

// postNoFatal posts a completion body from a goroutine other than the
// test's; a transport error is reported as status 0.
func postNoFatal(ctx context.Context, p *Pod, body string) reply {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+openai.PathCompletions, strings.NewReader(body))
	if err != nil {
		return reply{}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return reply{body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	var sb strings.Builder
	_, _ = bufio.NewReader(resp.Body).WriteTo(&sb)
	return reply{status: resp.StatusCode, header: resp.Header, body: []byte(sb.String())}
}

// TestCancelledPrefillStoresNothing checks that a client that goes away
// during its prefill frees the slot and leaves the cache and the event
// stream untouched.
func TestCancelledPrefillStoresNothing(t *testing.T) {
	cfg := testConfig()
	cfg.TimeScale = 1
	cfg.PrefillPerToken = time.Hour
	cfg.Events = DefaultConfig().Events
	p := startPod(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan reply, 1)
	go func() { done <- postNoFatal(ctx, p, `{"prompt":[`+strings.Repeat("300,", 40)+`301]}`) }()
	waitFor(t, func() string { return fmt.Sprintf("%+v", p.Stats()) }, func() bool { return p.Stats().Running == 1 })
	cancel()
	<-done
	waitFor(t, func() string { return fmt.Sprintf("%+v", p.Stats()) }, func() bool {
		s := p.Stats()
		return s.Running == 0 && s.Cancelled == 1
	})
	if s := p.Stats(); s.CacheBlocks != 0 || s.EventBatches != 0 || s.Prefills != 0 {
		t.Errorf("got stats %+v, want no blocks, no event batches, no prefill", s)
	}
}
