package enginemetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrStatus is returned for a scrape answered with a status other than 200.
var ErrStatus = errors.New("enginemetrics: metrics endpoint answered")

// ErrTooLarge is returned for a metrics page longer than MaxBodyBytes.
var ErrTooLarge = errors.New("enginemetrics: metrics page too large")

// Target is one pod to scrape.
type Target struct {
	// Pod is the pod id the snapshot is filed under.
	Pod string
	// URL is the pod's metrics URL.
	URL string
}

// Hooks observe a Scraper; nil fields are skipped. Scraped may be called
// concurrently by the round's workers; Round is called by the Run
// goroutine after each round, with the view just published.
type Hooks struct {
	Scraped func(pod string, err error, took time.Duration)
	Round   func(v View, took time.Duration)
	// RouterLoad returns the router's own count for pod now (requests in
	// flight, their KV blocks); it is called by the workers, concurrently,
	// before each scrape and when it was answered (the larger is kept).
	RouterLoad func(pod string) (requests, blocks int)
}

// Scraper scrapes its targets' metrics every interval and publishes a View
// after each round. Run is its one goroutine; View may be called from any
// goroutine at any time.
type Scraper struct {
	cfg     Config
	fams    []Names
	engines []Engine
	client  *http.Client
	targets func() []Target
	now     func() time.Time
	hooks   Hooks

	view atomic.Pointer[published]
	bufs sync.Pool // *worker
}

// worker is one scrape's reusable buffers.
type worker struct {
	buf    bytes.Buffer
	sample Sample
}

// NewScraper returns a scraper of the targets the targets function lists
// at the start of each round, over client (its TLS and transport; the
// scraper sets each request's timeout from cfg). now is the clock (nil:
// time.Now).
func NewScraper(cfg Config, client *http.Client, targets func() []Target, now func() time.Time, hooks Hooks) (*Scraper, error) {
	if err := cfg.Validate("engine_metrics"); err != nil {
		return nil, err
	}
	fams, err := NamesFor(cfg.Engine, cfg.Names)
	if err != nil {
		return nil, err
	}
	engines := []Engine{cfg.Engine}
	if cfg.Engine == EngineAuto || cfg.Engine == "" {
		engines = []Engine{EngineVLLM, EngineSGLang}
	}
	if now == nil {
		now = time.Now
	}
	if client == nil {
		client = http.DefaultClient
	}
	s := &Scraper{cfg: cfg, fams: fams, engines: engines, client: client, targets: targets, now: now, hooks: hooks}
	s.view.Store(publish(map[string]*Snapshot{}))
	return s, nil
}

// View returns the newest published view, at the scraper's clock's now.
func (s *Scraper) View() View {
	return View{published: s.view.Load(), now: s.now(), stale: s.cfg.StaleAfter}
}

// Run scrapes every interval until ctx ends, and returns when the last
// round has finished.
func (s *Scraper) Run(ctx context.Context) {
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		s.Round(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Round scrapes every target once, with at most Concurrency scrapes in
// flight, and publishes the view. It returns when every scrape finished.
func (s *Scraper) Round(ctx context.Context) {
	start := time.Now()
	targets := s.targets()
	prev := s.view.Load().pods
	next := make([]*Snapshot, len(targets))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(s.cfg.Concurrency, len(targets)) {
		wg.Go(func() {
			for i := range jobs {
				next[i] = s.scrapeOne(ctx, targets[i], prev[targets[i].Pod])
			}
		})
	}
	for i := range targets {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	m := make(map[string]*Snapshot, len(targets))
	for i, t := range targets {
		m[t.Pod] = next[i]
	}
	s.view.Store(publish(m))
	if s.hooks.Round != nil {
		s.hooks.Round(s.View(), time.Since(start))
	}
}

// scrapeOne scrapes t and returns its new snapshot: a new reading, or prev
// (or nothing) with the error.
func (s *Scraper) scrapeOne(ctx context.Context, t Target, prev *Snapshot) *Snapshot {
	w, _ := s.bufs.Get().(*worker)
	if w == nil {
		w = new(worker)
	}
	defer s.bufs.Put(w)
	// The router's count is read before the request and after the answer,
	// and the larger kept: the engine wrote its page somewhere between, and
	// a request the router finished (or started) meanwhile may be on it.
	// Keeping the larger errs toward the router's own estimate: it never
	// charges a pod for the router's own requests that ended during the
	// scrape, which on a busy cell (many requests ending per round trip)
	// would otherwise look like traffic the router did not route.
	var routerReqs, routerBlocks int
	if s.hooks.RouterLoad != nil {
		routerReqs, routerBlocks = s.hooks.RouterLoad(t.Pod)
	}
	start := time.Now()
	err := s.fetch(ctx, t.URL, &w.buf)
	if err == nil && s.hooks.RouterLoad != nil {
		r, b := s.hooks.RouterLoad(t.Pod)
		routerReqs, routerBlocks = max(routerReqs, r), max(routerBlocks, b)
	}
	if err == nil {
		err = Parse(w.buf.Bytes(), s.fams, s.engines, &w.sample)
	}
	if s.hooks.Scraped != nil {
		s.hooks.Scraped(t.Pod, err, time.Since(start))
	}
	if err != nil {
		out := &Snapshot{Err: err.Error(), Failures: 1}
		if prev != nil {
			out.Sample, out.At, out.Failures = prev.Sample, prev.At, prev.Failures+1
		}
		return out
	}
	out := &Snapshot{Sample: w.sample, At: s.now(), RouterRequests: routerReqs, RouterBlocks: routerBlocks}
	out.RunningLoRA = slices.Clone(w.sample.RunningLoRA)
	out.WaitingLoRA = slices.Clone(w.sample.WaitingLoRA)
	return out
}

// fetch GETs url into buf (reset first), bounded by the timeout and the
// body limit.
func (s *Scraper) fetch(ctx context.Context, url string, buf *bytes.Buffer) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("%w %d", ErrStatus, resp.StatusCode)
	}
	buf.Reset()
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, s.cfg.MaxBodyBytes+1))
	if err != nil {
		return err
	}
	if n > s.cfg.MaxBodyBytes {
		return fmt.Errorf("%w: over %d bytes", ErrTooLarge, s.cfg.MaxBodyBytes)
	}
	return nil
}
