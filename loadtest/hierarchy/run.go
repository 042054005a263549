package hierarchy

import (
	"runtime"

	"context"
	"fmt"
	"golang.org/x/sync/errgroup"
	"math"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cell/pipeline"
	"github.com/cellrouter/cellrouter/cell/plugins"
	"github.com/cellrouter/cellrouter/loadtest/trace"
	"github.com/cellrouter/cellrouter/loadtest/workload"
)

// Run replays the workload through both routers and reports. With
// cfg.Loads it sweeps the load (see Sweep); otherwise it runs once at
// cfg.DecodeMsPerToken.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	recs, err := records(cfg)
	if err != nil {
		return nil, err
	}
	if len(cfg.Loads) > 0 {
		return sweep(ctx, cfg, recs)
	}
	return runLevel(ctx, cfg, recs)
}

// records reads the trace or generates the agents or cold workload.
func records(cfg Config) ([]trace.Record, error) {
	if cfg.Workload == WorkloadCold {
		n := cfg.MaxRequests
		if n == 0 {
			n = workload.ColdRequests
		}
		cfg.progress("generated %d requests of cold-heavy conversations", n)
		return workload.Cold(n, cfg.Seed), nil
	}
	if cfg.Workload == WorkloadAgents {
		n := cfg.MaxRequests
		if n == 0 {
			n = AgentsRequests
		}
		cfg.progress("generated %d requests of agent sessions", n)
		return AgentsTrace(n, cfg.Seed), nil
	}
	recs, err := trace.ReadFile(cfg.TracePath, cfg.MaxRequests)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("hierarchy: %s: no requests", cfg.TracePath)
	}
	cfg.progress("read %d requests from %s", len(recs), cfg.TracePath)
	return recs, nil
}

// sweep runs one level per load of cfg.Loads (each a fresh fleet) and
// returns the report of the level at cfg.DecodeMsPerToken (else the
// first), with every level in Levels; it passes when every level passes.
func sweep(ctx context.Context, cfg Config, recs []trace.Record) (*Report, error) {
	start := time.Now()
	var levels []*Report
	top := 0
	for i, l := range cfg.Loads {
		c := cfg
		c.DecodeMsPerToken, c.Loads = l, nil
		cfg.progress("level %d/%d: %g ms per output token", i+1, len(cfg.Loads), l)
		rep, err := runLevel(ctx, c, recs)
		if err != nil {
			return nil, err
		}
		if l == cfg.DecodeMsPerToken {
			top = i
		}
		levels = append(levels, rep)
	}
	out := *levels[top]
	out.Loads, out.Levels = cfg.Loads, levels
	for _, l := range levels {
		out.Pass = out.Pass && l.Pass
	}
	out.WallSeconds = time.Since(start).Seconds()
	return &out, nil
}

// runLevel replays recs at cfg.DecodeMsPerToken once per seed (cfg.Seeds
// of them, as many at a time as there are CPUs) and pools the seeds' reuse
// (see Config.Seeds).
func runLevel(ctx context.Context, cfg Config, recs []trace.Record) (*Report, error) {
	start := time.Now()
	reps := make([]*Report, cfg.Seeds)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, runtime.GOMAXPROCS(0)))
	for k := range reps {
		c := cfg
		c.Seed, c.Seeds = cfg.Seed+uint64(k), 1
		g.Go(func() error {
			rep, err := runSeed(gctx, c, recs)
			reps[k] = rep
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep := pool(reps)
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

// runSeed replays recs once at cfg.DecodeMsPerToken and cfg.Seed.
func runSeed(ctx context.Context, cfg Config, recs []trace.Record) (*Report, error) {
	start := time.Now()
	s, err := newSim(cfg)
	if err != nil {
		return nil, err
	}
	defer s.close()
	if err := s.replay(ctx, recs); err != nil {
		return nil, err
	}
	rep := s.report(recs)
	if s.text != nil {
		rep.Tokenize = s.text.report(len(recs))
	}
	rep.WallSeconds = time.Since(start).Seconds()
	return rep, nil
}

// sim is the two routers and the run's totals.
type sim struct {
	cfg    Config
	hasher blockhash.Hasher
	seed   blockhash.Hash
	flat   *flatRouter
	hier   *hierRouter
	// text tokenizes text prompts and chats (nil for token prompts).
	text *texter

	nextGen                  int // the next summary generation's number
	nextLoad                 int // the next load announcement's number
	loadIntervalNs           float64
	blocks                   int64
	matchedFlat, matchedHier int64
	summaryIntervalNs        float64
}

func newSim(cfg Config) (*sim, error) {
	h, err := blockhash.NewHasher(cfg.BlockSize)
	if err != nil {
		return nil, fmt.Errorf("hierarchy: %w", err)
	}
	s := &sim{cfg: cfg, hasher: h, seed: blockhash.Seed(blockhash.Keys{Model: Model}), summaryIntervalNs: cfg.SummaryInterval * 1e9, loadIntervalNs: cfg.LoadInterval * 1e9}
	var tok plugins.Tokenizer
	if cfg.Prompt != PromptTokens {
		if s.text, err = newTexter(cfg); err != nil {
			return nil, err
		}
		tok = s.text.cell
	}
	if s.flat, err = newFlatRouter(cfg, h, tok); err != nil {
		s.text.close()
		return nil, err
	}
	if s.hier, err = newHierRouter(cfg, h, tok); err != nil {
		s.flat.cl.close()
		s.text.close()
		return nil, err
	}
	s.hier.text = s.text
	return s, nil
}

func (s *sim) close() {
	s.flat.cl.close()
	s.hier.close()
	s.text.close()
}

// genAt returns the trace time of summary generation k, in ns.
func (s *sim) genAt(k int) int64 { return int64(float64(k) * s.summaryIntervalNs) }

// loadAt returns the trace time of load announcement k, in ns (never, when
// loads go only with summaries).
func (s *sim) loadAt(k int) int64 {
	if s.loadIntervalNs <= 0 {
		return math.MaxInt64
	}
	return int64(float64(k) * s.loadIntervalNs)
}

// replay routes every request, in trace order, through both routers. Each
// request's prompt is every hash id expanded to 512 tokens; its chain is
// hashed once here (for the engine models and the global search) and again
// by each selector's block-hashes preparer, exactly as a cell would. In
// the text modes the prompt is every hash id's text (one message each in
// a chat): the engine tokenizes it for its cache, the global tier for its
// search and probes, and the serving cell at the hand-off.
func (s *sim) replay(ctx context.Context, recs []trace.Record) error {
	t0 := recs[0].Timestamp
	var toks, gtoks []uint32
	var chain, gchain []blockhash.Hash
	req := &pipeline.Request{Model: Model}
	probe := &pipeline.Request{Model: Model}
	for i, rec := range recs {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if i > 0 && i%2000 == 0 {
			s.cfg.progress("%d/%d requests, reuse flat %.4f hier %.4f", i, len(recs),
				float64(s.matchedFlat)/float64(s.blocks), float64(s.matchedHier)/float64(s.blocks))
		}
		now := (rec.Timestamp - t0) * int64(time.Millisecond)
		// Summaries due by now are published with the load of their time,
		// and between them the loads announced.
		for {
			gen, load := s.genAt(s.nextGen), s.loadAt(s.nextLoad)
			if gen <= load && gen <= now {
				s.hier.load.advance(gen)
				if err := s.hier.publish(); err != nil {
					return err
				}
				s.nextGen++
				continue
			}
			if load <= now {
				s.hier.load.advance(load)
				s.hier.announceLoad()
				s.nextLoad++
				continue
			}
			break
		}
		s.flat.load.advance(now)
		s.hier.load.advance(now)

		toks = toks[:0]
		r := request{i: i, now: now, req: req, probe: req}
		if s.text == nil {
			for _, id := range rec.HashIDs {
				toks = trace.AppendTokens(toks, id)
			}
			chain = s.hasher.Chain(s.seed, toks, chain[:0])
			req.TokenIDs = toks
			r.chain, r.search = chain, chain
		} else {
			toks = s.text.prepare(&rec, toks)
			chain = s.hasher.Chain(s.seed, toks, chain[:0])
			var err error
			if gtoks, err = s.text.globalTokens(ctx, toks, gtoks[:0]); err != nil {
				return err
			}
			gchain = s.hasher.Chain(s.seed, gtoks, gchain[:0])
			probe.TokenIDs = gtoks
			r.req, r.probe, r.chain, r.search = s.text.request, probe, chain, gchain
		}
		r.end = now + int64(float64(rec.OutputLength)*s.cfg.DecodeMsPerToken*float64(time.Millisecond))
		r.blocks = len(chain) + (rec.OutputLength+s.cfg.BlockSize-1)/s.cfg.BlockSize
		mf, err := s.flat.route(ctx, &r)
		if err != nil {
			return err
		}
		mh, err := s.hier.route(ctx, &r)
		if err != nil {
			return err
		}
		s.blocks += int64(len(chain))
		s.matchedFlat += int64(mf)
		s.matchedHier += int64(mh)
	}
	return nil
}
