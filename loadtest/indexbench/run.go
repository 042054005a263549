package indexbench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"time"

	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Run reads the trace, builds the workload, verifies it, and benchmarks
// cell/index (and the naive baseline if cfg.Baseline) as the package doc
// describes. It returns when done or when ctx ends.
func Run(ctx context.Context, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	begin := time.Now()
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		return Report{}, fmt.Errorf("indexbench: %w", err)
	}
	cfg.progress("read %d requests from %s", len(recs), cfg.TracePath)
	w, err := BuildWorkload(recs, cfg)
	if err != nil {
		return Report{}, err
	}
	recs = nil
	rep := newReport(cfg, w)
	rep.PrepS = time.Since(begin).Seconds()
	cfg.progress("built the timeline in %.1fs: %d events, %d queries, %d block-ops", rep.PrepS, rep.Events, rep.Queries, rep.BlockOps)

	factories := cfg.cellFactories()
	cells := len(factories)
	if cfg.Baseline {
		factories = append(factories, NaiveIndex)
	}
	if cfg.Verify {
		if err := Verify(w, factories...); err != nil {
			return Report{}, err
		}
		rep.Verified = true
		cfg.progress("verified every query against the engine model and between indexers")
	}
	rep.TimerOverheadNs = TimerOverhead()
	rep.LoadAvgStart = loadAverage()

	results := make([]Result, len(factories))
	for i, f := range factories {
		if err := ctx.Err(); err != nil {
			return Report{}, err
		}
		res, err := benchIndexer(ctx, f, w, cfg)
		if err != nil {
			return Report{}, err
		}
		results[i] = res
	}
	rep.Result = results[0]
	rep.Valid = results[0].Valid
	if cells == 2 {
		rep.Paged = &results[1]
		rep.Valid = rep.Valid && results[1].Valid
		rep.PagedVsBlock = compareLayouts(&results[1], &results[0])
	}
	if cfg.Baseline {
		rep.Baseline = &results[cells]
		rep.Valid = rep.Valid && results[cells].Valid
		if b := results[cells].ThresholdBlockOpsPerS; b > 0 {
			rep.Speedup = results[0].ThresholdBlockOpsPerS / b
		}
	}
	rep.LoadAvgEnd = loadAverage()
	cfg.progress("done in %.1fs", time.Since(begin).Seconds())
	return rep, nil
}

// newReport fills in the setup and the timeline counts.
func newReport(cfg Config, w *Workload) Report {
	r := Report{
		Trace:           cfg.TracePath,
		Layout:          cfg.Layout,
		Requests:        len(w.Chains),
		Workers:         cfg.Workers,
		Seed:            cfg.Seed,
		BlockSize:       cfg.BlockSize,
		BlocksPerWorker: cfg.BlocksPerWorker,
		ExpectedBlocks:  cfg.expectedBlocks(),
		GoMaxProcs:      runtime.GOMAXPROCS(0),
		Appliers:        len(w.streams),
		Queriers:        cfg.Queriers,
		MaxBatchOps:     cfg.MaxBatchOps,
		WindowS:         cfg.Window.Seconds(),
		StoredEvents:    w.StoredEvents,
		RemovedEvents:   w.RemovedEvents,
		Events:          w.StoredEvents + w.RemovedEvents,
		Queries:         int64(len(w.Chains)),
		StoredBlocks:    w.StoredBlocks,
		RemovedBlocks:   w.RemovedBlocks,
		QueryBlocks:     w.QueryBlocks,
		BlockOps:        w.BlockOps(),
		DistinctBlocks:  w.DistinctFinal,
	}
	var hit int64
	for _, h := range w.Hit {
		hit += int64(h)
	}
	if w.QueryBlocks > 0 {
		r.EngineHitRatio = float64(hit) / float64(w.QueryBlocks)
	}
	return r
}

// benchIndexer measures one indexer: memory and idle queries on the final
// state, then the pilot and the sweep.
func benchIndexer(ctx context.Context, f Factory, w *Workload, cfg Config) (Result, error) {
	res := Result{Indexer: f.Name}
	fig, err := measureStatic(f, w, w.FinalOps(), cfg.expectedBlocks())
	if err != nil {
		return res, err
	}
	res.HeapBytes, res.IndexedBlocks = fig.heapBytes, fig.blocks
	if w.DistinctFinal > 0 {
		res.BytesPerBlock = float64(fig.heapBytes) / float64(w.DistinctFinal)
	}
	if fig.blocks > 0 && fig.accountedBytes > 0 {
		res.AccountedBytesPerBlock = float64(fig.accountedBytes) / float64(fig.blocks)
	}
	res.IdleQueryP50Ns, res.IdleQueryP99Ns, res.MatchAllocsPerOp = fig.idleP50, fig.idleP99, fig.allocsPerMatch
	res.IdleBestP50Ns, res.IdleBestP99Ns = fig.bestP50, fig.bestP99
	res.IdleLookupsP50, res.IdleLookupsP99 = fig.lookupsP50, fig.lookupsP99
	res.IdleRoundsP50, res.IdleRoundsP99 = fig.roundsP50, fig.roundsP99
	cfg.progress("%s: %.1f bytes/block, idle query p50 %d ns p99 %d ns (best of %d: %d / %d ns), reads p99 %d in %d rounds, %.2f allocs/Match",
		f.Name, res.BytesPerBlock, fig.idleP50, fig.idleP99, idleRepeats, fig.bestP50, fig.bestP99, fig.lookupsP99, fig.roundsP99, fig.allocsPerMatch)

	pilot, err := runStep(ctx, f, w, makePlan(w, 0, cfg.Window), cfg)
	if err != nil {
		return res, err
	}
	res.PilotBlockOpsPerS = pilot.AchievedRate
	cfg.progress("%s: pilot (unpaced) %.3gM block-ops/s, busy %.2f/%.2f", f.Name, pilot.AchievedRate/1e6, pilot.ApplierBusy, pilot.QuerierBusy)

	factor := math.Pow(10, -1/float64(cfg.StepsPerDecade))
	rate := pilot.AchievedRate * cfg.StartFactor
	var points []Point
	step := func(rate float64) (Step, error) {
		st, err := runStep(ctx, f, w, makePlan(w, rate, cfg.Window), cfg)
		if err != nil {
			return st, err
		}
		res.Steps = append(res.Steps, st)
		points = append(points, st.point())
		cfg.progress("%s: step %d offered %.3gM achieved %.3gM block-ops/s, backlog %.3f (events %.3f, queries %.3f), busy %.2f/%.2f, query p99 %d ns (control %d), pass %v",
			f.Name, len(res.Steps), st.OfferedRate/1e6, st.AchievedRate/1e6, st.Backlog, st.EventBacklog, st.QueryBacklog,
			st.ApplierBusy, st.QuerierBusy, st.QueryP99Ns, st.NoiseP99Ns, st.Pass)
		return st, nil
	}
	// Sweep down in log steps until a step passes.
	passRate, failRate := 0.0, 0.0
	for i := 0; i < cfg.Steps && rate > 0; i++ {
		st, err := step(rate)
		if err != nil {
			return res, err
		}
		if st.Pass {
			passRate = rate
			break
		}
		failRate = rate
		rate *= factor
	}
	// Bisect between the passing rate and the failing one above it.
	for i := 0; i < cfg.Refine && passRate > 0 && failRate > 0; i++ {
		mid := math.Sqrt(passRate * failRate)
		st, err := step(mid)
		if err != nil {
			return res, err
		}
		if st.Pass {
			passRate = mid
		} else {
			failRate = mid
		}
	}
	th := FindThreshold(points, cfg.MinRatio, cfg.MaxBacklog)
	res.Valid, res.LowerBound = th.Valid, th.LowerBound
	if th.Found {
		st := res.Steps[th.Index]
		res.ThresholdBlockOpsPerS = st.OfferedRate
		res.EventsPerS, res.QueriesPerS = st.EventsPerS, st.QueriesPerS
		if st.DoneBlockOps > 0 {
			res.EventBlockOpsPerS = float64(st.DoneBlockOps-st.DoneQueryBlockOps) / st.ElapsedS
			res.StepAllocsPerBlockOp = float64(st.Allocs) / float64(st.DoneBlockOps)
		}
		res.QueryP50Ns, res.QueryP99Ns, res.QueryMaxNs = st.QueryP50Ns, st.QueryP99Ns, st.QueryMaxNs
		res.QuerySamples = st.DoneQueries
		res.NoiseP50Ns, res.NoiseP99Ns = st.NoiseP50Ns, st.NoiseP99Ns
		res.Backlog = st.Backlog
	}
	return res, nil
}
