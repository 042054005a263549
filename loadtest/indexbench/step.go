package indexbench

import (
	"context"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Step is the measurement of one sweep step (or of the unpaced pilot).
type Step struct {
	// NominalRate is the rate the whole trace was compressed to, block-ops/s
	// (0 for the unpaced pilot).
	NominalRate float64 `json:"nominal_block_ops_per_s"`
	// OfferedRate is the block-ops due within the window divided by the window.
	OfferedRate float64 `json:"offered_block_ops_per_s"`
	// AchievedRate is the block-ops done divided by the time they took (at
	// least the window).
	AchievedRate float64 `json:"achieved_block_ops_per_s"`
	// WindowS is the step's window; ElapsedS the time until the last
	// goroutine finished (it may drain for up to one more window).
	WindowS  float64 `json:"window_s"`
	ElapsedS float64 `json:"elapsed_s"`
	// BlockOps, Events and Queries are what the step offered; the Done
	// figures are what was completed.
	BlockOps     int64 `json:"block_ops"`
	Events       int64 `json:"events"`
	Queries      int64 `json:"queries"`
	DoneBlockOps int64 `json:"done_block_ops"`
	DoneEvents   int64 `json:"done_events"`
	DoneQueries  int64 `json:"done_queries"`
	// DoneQueryBlockOps is the part of DoneBlockOps that were queried blocks.
	DoneQueryBlockOps int64 `json:"done_query_block_ops"`
	// Backlog is the fraction of BlockOps not done at the end of the window;
	// EventBacklog and QueryBacklog split it into the block-ops of events
	// and of queries still queued then (they add up to Backlog).
	Backlog      float64 `json:"backlog"`
	EventBacklog float64 `json:"event_backlog"`
	QueryBacklog float64 `json:"query_backlog"`
	// EventsPerS and QueriesPerS are the achieved event and Match rates.
	EventsPerS  float64 `json:"events_per_s"`
	QueriesPerS float64 `json:"queries_per_s"`
	// Query latency of the step's Match calls, in ns.
	QueryP50Ns int64 `json:"query_p50_ns"`
	QueryP99Ns int64 `json:"query_p99_ns"`
	QueryMaxNs int64 `json:"query_max_ns"`
	// NoiseP50Ns and NoiseP99Ns time a fixed CPU-only loop of about a
	// microsecond right after every Match, the same way: the control. A
	// noise p99 far above its p50 means the machine itself (OS scheduling,
	// other processes, GC pauses) stretched timed regions in this step.
	NoiseP50Ns int64 `json:"noise_p50_ns"`
	NoiseP99Ns int64 `json:"noise_p99_ns"`
	// ApplierBusy and QuerierBusy are the fraction of the elapsed time the
	// appliers (on average) and the queriers spent inside Apply and Match.
	ApplierBusy float64 `json:"applier_busy"`
	QuerierBusy float64 `json:"querier_busy"`
	// Allocs counts heap allocations during the step, all goroutines.
	Allocs uint64 `json:"allocs"`
	// Pass says achieved >= MinRatio * offered.
	Pass bool `json:"pass"`
}

// point returns the step as FindThreshold sees it.
func (s Step) point() Point {
	return Point{Offered: s.OfferedRate, Achieved: s.AchievedRate, Backlog: s.Backlog}
}

// plan is what one step replays: the ops due within the window at rate k.
type plan struct {
	k        float64 // wall ns per trace ns; 0 means unpaced (all due at once)
	unpaced  bool
	window   time.Duration
	drain    time.Duration
	nominal  float64
	evCut    []int // per stream, events in the step
	qCut     int   // queries in the step (a prefix of the requests)
	blockOps int64 // events' and queries' block-ops
	eventOps int64 // events' block-ops only
	events   int64
}

// makePlan compresses the trace to nominal block-ops/s and keeps what falls
// within window. nominal <= 0 makes the unpaced pilot plan.
func makePlan(w *Workload, nominal float64, window time.Duration) plan {
	p := plan{window: window, nominal: nominal, evCut: make([]int, len(w.streams))}
	cut := int64(-1) // trace ns; -1 means everything
	if nominal <= 0 {
		p.unpaced = true
	} else {
		d := float64(w.BlockOps()) / nominal * 1e9 // ns the whole trace lasts
		if d < float64(window) {
			p.window = time.Duration(d)
		}
		if span := w.Span(); span > 0 {
			p.k = d / float64(span)
			cut = int64(float64(p.window) / p.k)
		}
		p.drain = p.window
	}
	for i := range w.streams {
		s := &w.streams[i]
		n := len(s.at)
		if cut >= 0 {
			n = sort.Search(len(s.at), func(j int) bool { return s.at[j] > cut })
		}
		p.evCut[i] = n
		p.events += int64(n)
		p.eventOps += int64(s.start(n))
	}
	p.blockOps = p.eventOps
	p.qCut = len(w.At)
	if cut >= 0 {
		p.qCut = sort.Search(len(w.At), func(j int) bool { return w.At[j] > cut })
	}
	for _, c := range w.Chains[:p.qCut] {
		p.blockOps += int64(len(c))
	}
	return p
}

// due returns when an op of trace time at is due, in wall ns from the start.
func due(at int64, k float64) int64 { return int64(float64(at) * k) }

// counter is one goroutine's progress, on its own cache lines.
type counter struct {
	ops    atomic.Int64
	items  atomic.Int64
	finish atomic.Int64
	busy   atomic.Int64 // ns spent inside Apply or Match
	_      [96]byte
}

// wait idles until about d ns from now: it sleeps for long gaps and yields
// for short ones, so an idle goroutine does not hold a core.
func wait(d int64) {
	if d > 300_000 {
		time.Sleep(time.Duration(d - 200_000))
		return
	}
	runtime.Gosched()
}

// runStep replays plan p into a fresh indexer from f.
func runStep(ctx context.Context, f Factory, w *Workload, p plan, cfg Config) (Step, error) {
	ix, err := f.New(w.Workers, cfg.expectedBlocks())
	if err != nil {
		return Step{}, err
	}
	defer ix.Close()
	na, nq := len(w.streams), cfg.Queriers
	matchers := make([]Matcher, nq)
	lats := make([][]int64, nq)
	noise := make([][]int64, nq)
	for q := range matchers {
		matchers[q] = ix.NewMatcher()
		lats[q] = make([]int64, 0, p.qCut/nq+1)
		noise[q] = make([]int64, 0, p.qCut/nq+1)
	}
	counters := make([]counter, na+nq)
	var stop atomic.Bool
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)

	hard := int64(p.window + p.drain)
	var wg sync.WaitGroup
	start := time.Now()
	for a := 0; a < na; a++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applyLoop(ix, &w.streams[a], p.evCut[a], p.k, start, hard, cfg.MaxBatchOps, &counters[a], &stop)
		}()
	}
	for q := 0; q < nq; q++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lats[q], noise[q] = queryLoop(matchers[q], w, q, nq, p.qCut, p.k, start, hard, &counters[na+q], lats[q], noise[q], &stop)
		}()
	}
	timer := time.NewTimer(p.window)
	select {
	case <-timer.C:
	case <-ctx.Done():
		stop.Store(true)
	}
	var evAtWindow, qAtWindow int64
	for i := range counters {
		if i < na {
			evAtWindow += counters[i].ops.Load()
		} else {
			qAtWindow += counters[i].ops.Load()
		}
	}
	wg.Wait()
	runtime.ReadMemStats(&m1)
	if err := ctx.Err(); err != nil {
		return Step{}, err
	}
	return summarize(p, counters, na, lats, noise, evAtWindow, qAtWindow, m1.Mallocs-m0.Mallocs, cfg), nil
}

// summarize turns the counters of a finished step into a Step.
func summarize(p plan, counters []counter, na int, lats, noise [][]int64, evAtWindow, qAtWindow int64, allocs uint64, cfg Config) Step {
	st := Step{
		NominalRate: p.nominal,
		WindowS:     p.window.Seconds(),
		BlockOps:    p.blockOps,
		Events:      p.events,
		Queries:     int64(p.qCut),
		Allocs:      allocs,
	}
	var finish int64
	for i := range counters {
		c := &counters[i]
		st.DoneBlockOps += c.ops.Load()
		if i < na {
			st.DoneEvents += c.items.Load()
		} else {
			st.DoneQueries += c.items.Load()
			st.DoneQueryBlockOps += c.ops.Load()
		}
		finish = max(finish, c.finish.Load())
	}
	elapsed := float64(finish) / 1e9
	if !p.unpaced {
		elapsed = max(elapsed, st.WindowS)
	}
	elapsed = max(elapsed, 1e-9)
	for i := range counters {
		b := float64(counters[i].busy.Load()) / 1e9 / elapsed
		if i < na {
			st.ApplierBusy += b / float64(na)
		} else {
			st.QuerierBusy += b / float64(len(counters)-na)
		}
	}
	st.ElapsedS = elapsed
	st.OfferedRate = float64(st.BlockOps) / st.WindowS
	st.AchievedRate = float64(st.DoneBlockOps) / elapsed
	st.EventsPerS = float64(st.DoneEvents) / elapsed
	st.QueriesPerS = float64(st.DoneQueries) / elapsed
	if st.BlockOps > 0 {
		total := float64(st.BlockOps)
		st.EventBacklog = float64(p.eventOps-evAtWindow) / total
		st.QueryBacklog = float64(st.BlockOps-p.eventOps-qAtWindow) / total
		st.Backlog = st.EventBacklog + st.QueryBacklog
	}
	var all []int64
	for _, l := range lats {
		all = append(all, l...)
	}
	st.QueryP50Ns = Percentile(all, 0.50)
	st.QueryP99Ns = Percentile(all, 0.99)
	if len(all) > 0 {
		st.QueryMaxNs = all[len(all)-1]
	}
	var ctl []int64
	for _, l := range noise {
		ctl = append(ctl, l...)
	}
	st.NoiseP50Ns = Percentile(ctl, 0.50)
	st.NoiseP99Ns = Percentile(ctl, 0.99)
	st.Pass = !p.unpaced && st.point().Passes(cfg.MinRatio)
	return st
}
