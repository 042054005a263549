package failover

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/replay"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// injection is what happened to one fault: when it was injected, detected,
// restarted and ready again (zero times: did not happen within bounds).
type injection struct {
	fault, target            string
	at, detected             time.Time
	restarted, ready         time.Time
	offset                   time.Duration // at, from the start of the replay
	detectTimeout, readyMiss bool
	flood                    *FloodResult // the event flood's measures
}

// run is one replay on one fleet.
type run struct {
	start   time.Time
	records []record
	faults  []injection
}

// Run runs the suite: the baseline replay (unless cfg.NoBaseline) and the
// replay with faults, each on a fresh fleet, and returns the per-fault
// report. Every process is stopped before it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	recs, err := loadTrace(cfg)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "cellrouter-failover-")
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	bin := cfg.BinDir
	if bin == "" {
		bin = dir
		progress(cfg, "building celld, globald and loadtest into %s", dir)
		if err := buildBinaries(ctx, dir, progressWriter(cfg)); err != nil {
			return nil, err
		}
	}
	var base *run
	if !cfg.NoBaseline {
		progress(cfg, "baseline run (no faults): %d requests over %v", len(recs), cfg.Duration())
		if base, err = runOnce(ctx, cfg, bin, dir, recs, false); err != nil {
			keep = true
			return nil, fmt.Errorf("%w (logs kept in %s)", err, dir)
		}
	}
	progress(cfg, "fault run: %v", cfg.Faults)
	faulty, err := runOnce(ctx, cfg, bin, dir, recs, true)
	if err != nil {
		keep = true
		return nil, fmt.Errorf("%w (logs kept in %s)", err, dir)
	}
	return buildReport(cfg, base, faulty), nil
}

// loadTrace reads the records sent within one run's duration.
func loadTrace(cfg Config) ([]trace.Record, error) {
	path, err := trace.Locate(cfg.Trace)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	defer f.Close()
	all, err := trace.ReadAll(f, 0)
	if err != nil {
		return nil, err
	}
	sched := replay.Schedule(all, 1, cfg.Rate)
	n := 0
	for n < len(all) && sched[n] < cfg.Duration() {
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("failover: the trace %s has no request within %v", path, cfg.Duration())
	}
	return all[:n], nil
}

// runOnce starts a fleet, replays recs through it (injecting the faults
// when faults is set) and stops it.
func runOnce(ctx context.Context, cfg Config, bin, dir string, recs []trace.Record, faults bool) (*run, error) {
	sub, err := os.MkdirTemp(dir, map[bool]string{false: "baseline-", true: "faults-"}[faults])
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	f, err := startFleet(ctx, cfg, bin, sub)
	if err != nil {
		return nil, err
	}
	defer f.stop()
	progress(cfg, "fleet up: %d pods, %d cells x %d replicas, %d globald", len(f.pods), cfg.Cells, cfg.ReplicasPerCell, len(f.globals))
	var urls []string
	for _, g := range f.globals {
		urls = append(urls, "http://"+g.http)
	}
	lb := newBalancer(urls)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var bg sync.WaitGroup
	defer bg.Wait()
	defer cancel()
	bg.Add(1)
	go func() { defer bg.Done(); lb.run(rctx) }()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost, tr.DisableCompression = cfg.Concurrency, true
	defer tr.CloseIdleConnections()
	c := &client{http: &http.Client{Transport: tr}, lb: lb}

	r := &run{records: make([]record, len(recs))}
	sched := replay.Schedule(recs, 1, cfg.Rate)
	var inflight atomic.Int64
	r.start = time.Now()
	c.start = r.start
	var injDone sync.WaitGroup
	if faults {
		injDone.Add(1)
		go func() {
			defer injDone.Done()
			r.faults = injectAll(rctx, cfg, f, lb, r.start, &inflight)
		}()
	}
	sem := make(chan struct{}, cfg.Concurrency)
	var reqs sync.WaitGroup
	var buf []uint32
	for i, rec := range recs {
		if d := time.Until(r.start.Add(sched[i])); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		if ctx.Err() != nil {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		buf = replay.PromptTokens(buf[:0], rec)
		body := replay.AppendBody(nil, buf, model, replay.MaxTokens(rec, cfg.MaxTokens), true)
		reqs.Add(1)
		inflight.Add(1)
		go func(i int) {
			defer reqs.Done()
			defer func() { <-sem; inflight.Add(-1) }()
			sent := time.Since(r.start)
			rc := c.send(rctx, body, cfg.RequestTimeout)
			rc.Sent = sent
			r.records[i] = rc
		}(i)
		if i%200 == 0 {
			progress(cfg, "  %d/%d requests sent at %v", i, len(recs), time.Since(r.start).Round(time.Second))
		}
	}
	reqs.Wait()
	if faults {
		// The injector ends by itself once the last fault recovered or its
		// bounds passed; wait for it before reading r.faults.
		injDone.Wait()
	}
	cancel() // stops the balancer's checks
	bg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return r, nil
}

// injectAll injects cfg.Faults at their offsets.
func injectAll(ctx context.Context, cfg Config, f *fleet, lb *balancer, start time.Time, inflight *atomic.Int64) []injection {
	var out []injection
	for k, name := range cfg.Faults {
		at := start.Add(cfg.faultAt(k))
		select {
		case <-ctx.Done():
			return out
		case <-time.After(time.Until(at)):
		}
		inj := inject(ctx, cfg, f, lb, name, inflight)
		inj.offset = inj.at.Sub(start)
		progress(cfg, "  %s %s at %v: detect %v, ready %v", inj.fault, inj.target, inj.offset.Round(time.Millisecond),
			since(inj.at, inj.detected), since(inj.restarted, inj.ready))
		out = append(out, inj)
	}
	return out
}

func since(a, b time.Time) time.Duration {
	if a.IsZero() || b.IsZero() {
		return -1
	}
	return b.Sub(a).Round(time.Millisecond)
}

// poll calls cond every 20ms until it holds, ctx ends or d passes, and
// returns when it held (zero if it did not).
func poll(ctx context.Context, d time.Duration, cond func() bool) time.Time {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return time.Now()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return time.Time{}
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// allGlobals reports whether cond holds at every running globald.
func allGlobals(f *fleet, cond func(g *globalProc) bool) bool {
	for _, g := range f.globals {
		if g.p.running() && !cond(g) {
			return false
		}
	}
	return true
}

// inject injects one fault and measures its detection and recovery.
func inject(ctx context.Context, cfg Config, f *fleet, lb *balancer, name string, inflight *atomic.Int64) injection {
	inj := injection{fault: name}
	R := cfg.ReplicasPerCell
	restartAt := func() {
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(inj.at.Add(cfg.RestartAfter))):
		}
	}
	replicaFault := func(r *replicaProc, term bool) {
		inj.target = fmt.Sprintf("cell-%d/%s", r.cell, r.id)
		if term {
			// While streams are in flight.
			poll(ctx, 5*time.Second, func() bool { return inflight.Load() > 0 })
		}
		inj.at = time.Now()
		if term {
			r.p.signal(syscall.SIGTERM)
		} else {
			r.p.kill()
		}
		inj.detected = poll(ctx, cfg.Window, func() bool {
			return allGlobals(f, func(g *globalProc) bool { return f.endpoints(g, r.cell) == R-1 })
		})
		r.p.wait(15 * time.Second)
		restartAt()
		if r.p.start() != nil {
			return
		}
		inj.restarted = time.Now()
		inj.ready = poll(ctx, cfg.StartTimeout, func() bool {
			return f.ok("http://"+r.http+"/readyz") && allGlobals(f, func(g *globalProc) bool { return f.endpoints(g, r.cell) == R })
		})
	}
	switch name {
	case FaultKillCellReplica:
		replicaFault(f.replicasOf(0)[0], false)
	case FaultTermCellReplica:
		rs := f.replicasOf(cfg.Cells - 1)
		replicaFault(rs[len(rs)-1], true)
	case FaultKillGlobald:
		i := len(f.globals) - 1
		g := f.globals[i]
		inj.target = g.name
		inj.at = time.Now()
		g.p.kill()
		inj.detected = poll(ctx, cfg.Window, func() bool {
			down, _ := lb.stateSince(i)
			return !lb.up[i].Load() && !down.Before(inj.at)
		})
		if !inj.detected.IsZero() {
			down, _ := lb.stateSince(i)
			inj.detected = down
		}
		restartAt()
		if g.p.start() != nil {
			return inj
		}
		inj.restarted = time.Now()
		inj.ready = poll(ctx, cfg.StartTimeout, func() bool {
			if !lb.up[i].Load() || !f.ok("http://"+g.http+"/readyz") {
				return false
			}
			for c := range cfg.Cells {
				if f.endpoints(g, c) != R {
					return false
				}
			}
			return true
		})
	case FaultFreezeCellReplica:
		freezeCellReplica(ctx, cfg, f, &inj)
	case FaultFreezePod:
		freezePod(ctx, cfg, f, &inj)
	case FaultEventFlood:
		eventFlood(ctx, cfg, f, &inj)
	case FaultKillPod:
		pd := f.pods[len(f.pods)-1]
		inj.target = pd.id
		inj.at = time.Now()
		pd.p.kill()
		state := func(want string) func() bool {
			return func() bool {
				for _, r := range f.replicasOf(pd.cell) {
					if r.p.running() && f.podState(r, pd.id) != want {
						return false
					}
				}
				return true
			}
		}
		inj.detected = poll(ctx, cfg.Window, state("POD_STATE_DEAD"))
		restartAt()
		if pd.p.start() != nil {
			return inj
		}
		inj.restarted = time.Now()
		inj.ready = poll(ctx, cfg.StartTimeout, state("POD_STATE_READY"))
	}
	inj.detectTimeout = inj.detected.IsZero()
	inj.readyMiss = inj.ready.IsZero()
	return inj
}
