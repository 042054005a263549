package burst

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
	"github.com/cellrouter/cellrouter/loadtest/trace"
)

// Report is the benchmark's result.
type Report struct {
	Pods              int     `json:"pods"`
	BlocksPerPod      int     `json:"blocks_per_pod"`
	BlockSize         int     `json:"block_size"`
	PrefixTokens      int     `json:"prefix_tokens"`
	SuffixTokens      int     `json:"suffix_tokens"`
	WindowMs          float64 `json:"window_ms"`
	PrefillPerTokenUs float64 `json:"prefill_per_token_us"`
	MaxRunning        int     `json:"max_running"`
	KVOverlapWeight   float64 `json:"kv_overlap_weight"`
	SpeculativeTTLMs  float64 `json:"speculative_ttl_ms"`
	Repeat            int     `json:"repeat"`
	// Bursts has one entry per burst size, in Config.Sizes order.
	Bursts []Burst `json:"bursts"`
	WallS  float64 `json:"wall_s"`
}

// Burst is one burst size, sent with and without speculative entries.
type Burst struct {
	N           int     `json:"n"`
	Speculative *Result `json:"speculative"`
	Exact       *Result `json:"exact"`
}

// Result is one burst through one cell.
type Result struct {
	// PodsPrefilled counts the pods that computed at least one block of
	// the shared prefix: the figure speculative entries bring down (target
	// 1, unless the load term sends requests to a second pod).
	PodsPrefilled int `json:"pods_prefilled"`
	// PodsUsed counts the pods that served a request of the burst.
	PodsUsed int `json:"pods_used"`
	// PrefillTokens is the prompt tokens the engines computed (not
	// cached), over the burst; PrefixPrefillTokens the part of them in the
	// shared prefix; CachedTokens the prompt tokens served from cache.
	PrefillTokens       int64 `json:"prefill_tokens"`
	PrefixPrefillTokens int64 `json:"prefix_prefill_tokens"`
	CachedTokens        int64 `json:"cached_tokens"`
	// LatencyP50Ms and LatencyMaxMs are the requests' end-to-end times.
	LatencyP50Ms float64 `json:"latency_p50_ms"`
	LatencyMaxMs float64 `json:"latency_max_ms"`
	// RequestsPerPod counts the burst's requests by serving pod.
	RequestsPerPod map[string]int `json:"requests_per_pod"`
	// Errors counts failed requests.
	Errors int `json:"errors"`
	// PodsPrefilledRuns and PrefillTokensRuns list every run's figures
	// when the burst was repeated; the fields above are then the median
	// run's (by pods_prefilled, then prefill_tokens).
	PodsPrefilledRuns []int   `json:"pods_prefilled_runs,omitempty"`
	PrefillTokensRuns []int64 `json:"prefill_tokens_runs,omitempty"`
}

// median returns the median of runs by pods prefilled, then prefill
// tokens, with every run's figures attached when there are several.
func median(runs []*Result) *Result {
	sorted := append([]*Result(nil), runs...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].PodsPrefilled != sorted[j].PodsPrefilled {
			return sorted[i].PodsPrefilled < sorted[j].PodsPrefilled
		}
		return sorted[i].PrefillTokens < sorted[j].PrefillTokens
	})
	m := *sorted[(len(sorted)-1)/2]
	if len(runs) > 1 {
		for _, r := range runs {
			m.PodsPrefilledRuns = append(m.PodsPrefilledRuns, r.PodsPrefilled)
			m.PrefillTokensRuns = append(m.PrefillTokensRuns, r.PrefillTokens)
		}
	}
	return &m
}

// Run sends every burst of cfg and returns the report. progress, if not
// nil, gets a line per run.
func Run(ctx context.Context, cfg Config, progress io.Writer) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	start := time.Now()
	rep := &Report{Pods: cfg.Pods, BlocksPerPod: cfg.BlocksPerPod, BlockSize: cfg.BlockSize, PrefixTokens: cfg.PrefixTokens,
		SuffixTokens: cfg.SuffixTokens, WindowMs: ms(cfg.Window), PrefillPerTokenUs: float64(cfg.PrefillPerToken) / float64(time.Microsecond),
		MaxRunning: cfg.MaxRunning, KVOverlapWeight: cfg.KVOverlapWeight, SpeculativeTTLMs: ms(cfg.SpeculativeTTL),
		Repeat: cfg.Repeat}
	for i, n := range cfg.Sizes {
		b := Burst{N: n}
		for _, spec := range []bool{true, false} {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			var runs []*Result
			for k := 0; k < cfg.Repeat; k++ {
				r, err := runOne(ctx, cfg, n, uint32(i*cfg.Repeat+k), spec)
				if err != nil {
					return nil, err
				}
				runs = append(runs, r)
			}
			res := median(runs)
			name := "exact"
			if spec {
				b.Speculative, name = res, "speculative"
			} else {
				b.Exact = res
			}
			if progress != nil {
				fmt.Fprintf(progress, "burst: n=%d %s: %d pods prefilled the prefix (median of %d), %d prefill tokens, %d errors\n",
					n, name, res.PodsPrefilled, len(runs), res.PrefillTokens, res.Errors)
			}
		}
		rep.Bursts = append(rep.Bursts, b)
	}
	rep.WallS = time.Since(start).Seconds()
	return rep, nil
}

// runOne starts a cold fleet and a cell, speculative entries on or off, and
// sends one burst of n requests.
func runOne(ctx context.Context, cfg Config, n int, salt uint32, spec bool) (*Result, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	pc := enginesim.DefaultConfig()
	pc.ID, pc.Model, pc.BlockSize, pc.Blocks = "pod", cfg.Model, cfg.BlockSize, cfg.BlocksPerPod
	pc.PrefillPerToken, pc.DecodePerToken, pc.MaxRunning, pc.TimeScale, pc.Logger = cfg.PrefillPerToken, cfg.DecodePerToken, cfg.MaxRunning, 1, quiet
	fleet, err := enginesim.StartFleet(enginesim.FleetConfig{Pods: cfg.Pods, Pod: pc})
	if err != nil {
		return nil, err
	}
	defer fleet.Close()
	cc := cell.DefaultConfig()
	cc.CellID = "burst"
	cc.HTTPAddr, cc.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	cc.Events.BlockSize = cfg.BlockSize
	cc.HealthInterval = time.Second
	cc.Routing.KVOverlapScoreWeight = cfg.KVOverlapWeight
	cc.Routing.RequestTimeout = cfg.Timeout
	cc.Speculative.TTL = 0
	if spec {
		cc.Speculative.TTL = cfg.SpeculativeTTL
	}
	for _, p := range fleet.Pods() {
		cc.Pods = append(cc.Pods, cell.PodConfig{ID: p.ID(), Address: p.HTTPAddr(), ZMQEndpoint: p.ZMQEndpoint(),
			ReplayEndpoint: p.ReplayEndpoint(), KVBlocks: cfg.BlocksPerPod})
	}
	c, err := cell.New(cc, quiet)
	if err != nil {
		return nil, err
	}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(cctx) }()
	defer func() {
		stop()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}()
	target := "http://" + c.HTTPAddr()
	if err := waitReady(ctx, target, fleet); err != nil {
		return nil, err
	}
	return send(ctx, cfg, target, n, salt), nil
}

// answer is what one request of a burst saw.
type answer struct {
	pod            string
	prompt, cached int64
	latency        time.Duration
	err            error
}

// send sends the burst: request i at i*Window/n, each the shared prefix and
// its own suffix, and sums up the answers.
func send(ctx context.Context, cfg Config, target string, n int, salt uint32) *Result {
	prefix := prompt(salt, 0, cfg.PrefixTokens)
	answers := make([]answer, n)
	bodies := make([][]byte, n)
	for i := range bodies {
		toks := append(append([]uint32(nil), prefix...), prompt(salt, uint32(i+1), cfg.SuffixTokens)...)
		bodies[i], _ = json.Marshal(map[string]any{"model": cfg.Model, "prompt": toks, "max_tokens": cfg.MaxTokens})
	}
	cl := &http.Client{Timeout: cfg.Timeout, Transport: &http.Transport{MaxIdleConnsPerHost: n + 4, MaxConnsPerHost: 0}}
	defer cl.CloseIdleConnections()
	warmUp(ctx, cl, target, cfg, n, salt)
	start := time.Now().Add(20 * time.Millisecond) // every sender waiting
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(int64(cfg.Window) * int64(i) / int64(n)))
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			time.Sleep(time.Until(at)) // open loop: the arrival schedule, not synchronisation
			answers[i] = post(ctx, cl, target, bodies[i])
		}(i)
	}
	wg.Wait()
	res := &Result{RequestsPerPod: map[string]int{}}
	prefilled := map[string]bool{}
	var lats []float64
	for _, a := range answers {
		if a.err != nil {
			res.Errors++
			continue
		}
		res.RequestsPerPod[a.pod]++
		res.PrefillTokens += a.prompt - a.cached
		res.CachedTokens += a.cached
		fromPrefix := int64(cfg.PrefixTokens) - min(a.cached, int64(cfg.PrefixTokens))
		res.PrefixPrefillTokens += fromPrefix
		if fromPrefix >= int64(cfg.BlockSize) {
			prefilled[a.pod] = true
		}
		lats = append(lats, ms(a.latency))
	}
	res.PodsPrefilled, res.PodsUsed = len(prefilled), len(res.RequestsPerPod)
	sort.Float64s(lats)
	if len(lats) > 0 {
		res.LatencyP50Ms, res.LatencyMaxMs = lats[len(lats)/2], lats[len(lats)-1]
	}
	return res
}

// warmUp opens the client's n connections to the cell (so that a
// request's arrival time is its send time, not a dial's), and sends one
// short request through the cell (so that its first decision, candidate
// list and upstream connection are not paid inside the burst). The short
// request shares nothing with the burst's prompts.
func warmUp(ctx context.Context, cl *http.Client, target string, cfg Config, n int, salt uint32) {
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, target+"/healthz", nil)
			if err != nil {
				return
			}
			if resp, err := cl.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	wg.Wait()
	body, _ := json.Marshal(map[string]any{"model": cfg.Model, "prompt": prompt(salt+1000, 0, cfg.BlockSize), "max_tokens": 1})
	post(ctx, cl, target, body)
}

// post sends one completion and reads its pod and usage.
func post(ctx context.Context, cl *http.Client, target string, body []byte) answer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	t0 := time.Now()
	resp, err := cl.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	var out struct {
		Usage struct {
			PromptTokens int64 `json:"prompt_tokens"`
			Details      struct {
				CachedTokens int64 `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return answer{err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return answer{err: fmt.Errorf("status %d", resp.StatusCode)}
	}
	return answer{pod: resp.Header.Get(cell.PodHeader), prompt: out.Usage.PromptTokens, cached: out.Usage.Details.CachedTokens,
		latency: time.Since(t0)}
}

// prompt returns n token ids of stream k under salt: stream 0 is the
// burst's prefix, stream i+1 request i's suffix.
func prompt(salt, k uint32, n int) []uint32 {
	out := make([]uint32, n)
	base := 1000 + (salt*4099+k)*7919
	for i := range out {
		out[i] = (base + uint32(i)*31) % (trace.Vocab - 1000)
		out[i] += 1000
	}
	return out
}

// waitReady polls until the cell answers /readyz and every pod has an
// event subscriber.
func waitReady(ctx context.Context, target string, fleet *enginesim.Fleet) error {
	deadline := time.Now().Add(60 * time.Second)
	cl := &http.Client{Timeout: 2 * time.Second}
	for {
		ok := true
		for _, p := range fleet.Pods() {
			ok = ok && p.EventsSubscribed()
		}
		if ok {
			if resp, err := cl.Get(target + "/readyz"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("burst: cell at %s and fleet not ready after 60s", target)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
