package failover

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// record is one request as the client saw it.
type record struct {
	// Sent is the offset from the start of the replay.
	Sent time.Duration
	// FailedBeforeFirstByte: no byte of an answer arrived (every globald
	// tried refused or reset, or the status was not 200).
	FailedBeforeFirstByte bool
	// Cut: the stream broke after its first byte (no [DONE]).
	Cut bool
	// Prompt and Cached are the usage's token counts (0 without usage).
	Prompt, Cached int
	// Detail says why it failed.
	Detail string
	// FirstByte is the wait from sending until the first event of the
	// answer (0 when none came); MaxGap the longest wait between two
	// events of the stream after it.
	FirstByte, MaxGap time.Duration
	// ErrorEvent: the stream ended with an OpenAI error event (data:
	// {"error":...}), as a router ends a stream whose upstream stalled.
	ErrorEvent bool
}

// balancer is the client's stand-in for a load balancer over the globald
// endpoints: round robin over the ones up; a connection that fails before
// any answer marks an endpoint down (and the request moves on); a /readyz
// check every checkEvery takes it back.
type balancer struct {
	urls  []string
	up    []atomic.Bool
	turn  atomic.Uint64
	check *http.Client

	mu     sync.Mutex
	downAt []time.Time // when each endpoint was last marked down
	upAt   []time.Time // when each was last taken back
}

const checkEvery = 100 * time.Millisecond

func newBalancer(urls []string) *balancer {
	b := &balancer{urls: urls, up: make([]atomic.Bool, len(urls)), check: &http.Client{Timeout: time.Second},
		downAt: make([]time.Time, len(urls)), upAt: make([]time.Time, len(urls))}
	for i := range b.up {
		b.up[i].Store(true)
	}
	return b
}

func (b *balancer) setUp(i int, up bool) {
	if b.up[i].Swap(up) == up {
		return
	}
	now := time.Now()
	b.mu.Lock()
	if up {
		b.upAt[i] = now
	} else {
		b.downAt[i] = now
	}
	b.mu.Unlock()
}

// stateSince returns when endpoint i was last marked down and taken back.
func (b *balancer) stateSince(i int) (down, up time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.downAt[i], b.upAt[i]
}

// order returns the endpoints to try: those up, from the next turn on.
func (b *balancer) order() []int {
	n := len(b.urls)
	start := int(b.turn.Add(1) % uint64(n))
	var out []int
	for k := range n {
		i := (start + k) % n
		if b.up[i].Load() {
			out = append(out, i)
		}
	}
	return out
}

// run checks the endpoints marked down every checkEvery until ctx ends.
func (b *balancer) run(ctx context.Context) {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for i, u := range b.urls {
			if b.up[i].Load() {
				continue
			}
			resp, err := b.check.Get(u + "/readyz")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					b.setUp(i, true)
				}
			}
		}
	}
}

// client sends the replay's requests through a balancer.
type client struct {
	http  *http.Client
	lb    *balancer
	start time.Time
}

// errNoAnswer marks a failure where nothing was received.
var errNoAnswer = errors.New("no answer")

// send sends body and returns the record (Sent set by the caller).
func (c *client) send(ctx context.Context, body []byte, timeout time.Duration) record {
	var rec record
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	var lastErr error
	for _, i := range c.lb.order() {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.lb.urls[i]+"/v1/completions", bytes.NewReader(body))
		if err != nil {
			lastErr = err
			break
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.http.Do(req)
		if err != nil {
			lastErr = err
			if ctx.Err() != nil {
				break
			}
			// Nothing came back: a load balancer's connect-failure retry.
			c.lb.setUp(i, false)
			continue
		}
		return readAnswer(resp, start)
	}
	rec.FailedBeforeFirstByte = true
	rec.FirstByte = time.Since(start)
	if lastErr == nil {
		lastErr = errNoAnswer
	}
	rec.Detail = lastErr.Error()
	return rec
}

// readAnswer reads a streamed answer sent at start: failed before the first
// byte unless 200, cut unless it ends with [DONE]; the usage chunk gives the
// tokens; the events' arrival times give the first-byte wait and the
// longest gap.
func readAnswer(resp *http.Response, start time.Time) record {
	defer resp.Body.Close()
	var rec record
	if resp.StatusCode != http.StatusOK {
		rec.FailedBeforeFirstByte = true
		rec.FirstByte = time.Since(start)
		var msg [512]byte
		n, _ := resp.Body.Read(msg[:])
		rec.Detail = resp.Status + ": " + strings.TrimSpace(string(msg[:n]))
		return rec
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	done := false
	var last time.Time
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		now := time.Now()
		if last.IsZero() {
			rec.FirstByte = now.Sub(start)
		} else if gap := now.Sub(last); gap > rec.MaxGap {
			rec.MaxGap = gap
		}
		last = now
		if strings.HasPrefix(data, `{"error"`) {
			rec.ErrorEvent = true
		}
		if data == "[DONE]" {
			done = true
			break
		}
		var ch struct {
			Usage *struct {
				PromptTokens int `json:"prompt_tokens"`
				Details      *struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if json.Unmarshal([]byte(data), &ch) == nil && ch.Usage != nil {
			rec.Prompt = ch.Usage.PromptTokens
			if ch.Usage.Details != nil {
				rec.Cached = ch.Usage.Details.CachedTokens
			}
		}
	}
	if !done {
		rec.Cut = true
		if err := sc.Err(); err != nil {
			rec.Detail = err.Error()
		} else {
			rec.Detail = "stream ended without [DONE]"
		}
	}
	return rec
}
