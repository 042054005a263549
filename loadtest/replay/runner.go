package replay

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Observer hears of a replay's progress. Its methods are called from many
// goroutines at once and must not block for long.
type Observer interface {
	// Sent is called when request index is sent.
	Sent(index int)
	// Done is called when a request has finished; r is not modified after.
	Done(r *Result)
}

// Outcome is a finished replay.
type Outcome struct {
	// Results has one entry per record, in record order. Records never
	// sent (the replay was stopped) have Err ErrCanceled and Sent < 0.
	Results []Result
	// Elapsed is the wall time from the start to the last response.
	Elapsed time.Duration
	// Delayed counts requests the concurrency cap held back.
	Delayed int
	// Started is the wall-clock time of the start.
	Started time.Time
}

// CheckTarget dials the target's host and port once, so that an
// unreachable target is one clear error instead of a run of failures.
func CheckTarget(ctx context.Context, target string, timeout time.Duration) error {
	u, err := url.Parse(target)
	if err != nil {
		return fmt.Errorf("replay: target %q: %v", target, err)
	}
	host := u.Host
	if u.Port() == "" {
		port := "80"
		if u.Scheme == "https" {
			port = "443"
		}
		host = net.JoinHostPort(u.Hostname(), port)
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("replay: target %s is unreachable: %v", target, err)
	}
	return c.Close()
}

// Run replays recs against cfg.Target on the open-loop schedule of their
// timestamps and returns one Result per record. obs may be nil. Run returns
// an error only for a bad Config or an unreachable target; failed requests
// are Results. When ctx ends, requests in flight are cancelled and the rest
// are not sent.
func Run(ctx context.Context, cfg Config, recs []trace.Record, obs Observer) (*Outcome, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := CheckTarget(ctx, cfg.Target, 5*time.Second); err != nil {
		return nil, err
	}
	tr := newTransport(cfg.Concurrency)
	defer tr.CloseIdleConnections()
	started := time.Now()
	s := &sender{client: &http.Client{Transport: tr}, url: cfg.endpoint(), cfg: cfg,
		since: func() time.Duration { return time.Since(started) }}
	out := &Outcome{Results: make([]Result, len(recs)), Started: started}
	offsets := Schedule(recs, cfg.TimeScale, cfg.Rate)
	var sem chan struct{}
	if cfg.Concurrency > 0 {
		sem = make(chan struct{}, cfg.Concurrency)
	}
	var wg sync.WaitGroup
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := 0
	for ; next < len(recs); next++ {
		if !waitUntil(ctx, timer, offsets[next]-s.since()) {
			break
		}
		delayed := false
		if sem != nil {
			select {
			case sem <- struct{}{}:
			default:
				delayed = true
				out.Delayed++
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
				}
			}
			if ctx.Err() != nil {
				break
			}
		}
		res := &out.Results[next]
		res.Index, res.Scheduled, res.Delayed = next, offsets[next], delayed
		wg.Add(1)
		go func(rec trace.Record) {
			defer wg.Done()
			if sem != nil {
				defer func() { <-sem }()
			}
			send(ctx, s, cfg, rec, res, obs)
		}(recs[next])
	}
	for i := next; i < len(recs); i++ {
		out.Results[i] = Result{Index: i, Scheduled: offsets[i], Sent: -1, Pod: UnknownPod,
			Err: ErrCanceled, Detail: "not sent: the replay was stopped"}
	}
	wg.Wait()
	out.Elapsed = s.since()
	return out, nil
}

// waitUntil waits d on timer, or returns false when ctx ends first.
func waitUntil(ctx context.Context, timer *time.Timer, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	if d <= 0 {
		return true
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		timer.Stop() // since Go 1.23 no stale tick is left to drain
		return false
	}
}

// bufs recycles request bodies and token buffers between requests.
var bufs = sync.Pool{New: func() any { return new(buffers) }}

// buffers are one request's scratch space.
type buffers struct {
	tokens []uint32
	body   []byte
}

// send builds rec's body and sends it.
func send(ctx context.Context, s *sender, cfg Config, rec trace.Record, res *Result, obs Observer) {
	b := bufs.Get().(*buffers)
	defer bufs.Put(b)
	b.tokens = PromptTokens(b.tokens[:0], rec)
	b.body = AppendBody(b.body[:0], b.tokens, cfg.Model, MaxTokens(rec, cfg.MaxTokensCap), cfg.Stream)
	if obs != nil {
		obs.Sent(res.Index)
	}
	s.do(ctx, b.body, len(b.tokens), res)
	if obs != nil {
		obs.Done(res)
	}
}
