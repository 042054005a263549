package overhead

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell"
)

// Config says what to measure.
type Config struct {
	// Requests is the number of requests per side and mode.
	Requests int
	// Warmup requests per side are sent first and not measured.
	Warmup int
	// PromptTokens is the length of the token-array prompt.
	PromptTokens int
	// Chunks is the number of stream chunks the pod sends.
	Chunks int
	// Pods is the number of pods behind the cell (all equally good: the
	// decision still scores every one).
	Pods int
	// Prompt is what the direct-versus-cell measurement sends: PromptTokens
	// (token ids), PromptText (text the cell tokenizes) or PromptChat.
	Prompt string
	// Global also measures the global tier in front of the cell, for every
	// prompt kind (GlobalTier).
	Global bool
	// TLS also measures what mutual TLS costs on the global tier's hop to
	// the cell (TLSHop); it needs Global.
	TLS bool
	// Path also measures the whole path (Report.Path and Report.Global):
	// pod, cell and global tier side by side at each Concurrency, the rate
	// ramp and the CPU per request; it needs Global.
	Path bool
	// Picker also measures the cell as a gateway's endpoint picker against
	// proxy mode, side by side for the same requests (Report.Picker).
	Picker bool
	// Concurrency lists the path's client counts (1 gives the headline).
	Concurrency []int
	// RampRates are the rates (requests per second) each tier's ramp
	// tries, in order, and RampStep how long each is sent.
	RampRates []float64
	RampStep  time.Duration
	// CPURate is the rate at which the CPU per request is measured, for
	// CPUStep per tier and round.
	CPURate float64
	CPUStep time.Duration
	// CPUProfile, when set, receives a pprof CPU profile of the path
	// measurement. The process's goroutines carry the label "tier" (pod,
	// cell, global, global-probed, global-remote, client), so `go tool
	// pprof -tagfocus tier=global` shows the global tier alone.
	CPUProfile io.Writer
}

// DefaultConfig measures 2000 requests per side and mode, with token
// prompts, and the global tier.
func DefaultConfig() Config {
	return Config{Requests: 2000, Warmup: 200, PromptTokens: 1024, Chunks: 16, Pods: 16, Prompt: PromptTokens, Global: true,
		Picker: true, Path: true, Concurrency: []int{1, 16, 64}, RampRates: []float64{500, 1000, 2000, 3000, 4000, 5000, 6000, 8000, 10000, 12000, 16000},
		RampStep: time.Second, CPURate: 1000, CPUStep: time.Second}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Requests < 10:
		return fmt.Errorf("overhead: Requests = %d, want >= 10", c.Requests)
	case c.Warmup < 0:
		return fmt.Errorf("overhead: Warmup = %d, want >= 0", c.Warmup)
	case c.PromptTokens < 64:
		return fmt.Errorf("overhead: PromptTokens = %d, want >= 64", c.PromptTokens)
	case c.Prompt != PromptTokens && c.Prompt != PromptText && c.Prompt != PromptChat:
		return fmt.Errorf("overhead: Prompt = %q, want tokens, text or chat", c.Prompt)
	case c.Chunks < 1:
		return fmt.Errorf("overhead: Chunks = %d, want >= 1", c.Chunks)
	case c.Pods < 1 || c.Pods > 256:
		return fmt.Errorf("overhead: Pods = %d, want 1..256", c.Pods)
	case c.TLS && !c.Global:
		return fmt.Errorf("overhead: TLS = true: needs Global (the hop measured is the global tier's)")
	case c.Path && !c.Global:
		return fmt.Errorf("overhead: Path = true: needs Global (the path ends at the global tier)")
	case c.Path && (c.CPURate <= 0 || c.CPUStep <= 0 || c.RampStep <= 0 || len(c.RampRates) == 0 || len(c.Concurrency) == 0):
		return fmt.Errorf("overhead: Path needs Concurrency, RampRates, RampStep > 0, CPURate > 0 and CPUStep > 0 (got %v, %v, %v, %v, %v)",
			c.Concurrency, c.RampRates, c.RampStep, c.CPURate, c.CPUStep)
	}
	for _, n := range c.Concurrency {
		if n < 1 || n > maxInFlight {
			return fmt.Errorf("overhead: Concurrency %d, want 1..%d", n, maxInFlight)
		}
	}
	for i, r := range c.RampRates {
		if r <= 0 || (i > 0 && r <= c.RampRates[i-1]) {
			return fmt.Errorf("overhead: RampRates %v, want positive and increasing", c.RampRates)
		}
	}
	return nil
}

// Side is the latency of one side of one mode, in milliseconds.
type Side struct {
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
}

// Mode is one mode's result: direct, through the cell, and the difference.
type Mode struct {
	Direct Side `json:"direct"`
	Cell   Side `json:"cell"`
	// OverheadP50Ms and OverheadP99Ms are cell minus direct at that
	// percentile.
	OverheadP50Ms float64 `json:"overhead_p50_ms"`
	OverheadP99Ms float64 `json:"overhead_p99_ms"`
}

// Report is the result. The top-level fields are the non-streaming mode.
type Report struct {
	Requests     int `json:"requests"`
	Pods         int `json:"pods"`
	PromptTokens int `json:"prompt_tokens"`
	// Prompt is the kind of prompt of the direct and cell sides.
	Prompt        string  `json:"prompt"`
	DirectP99Ms   float64 `json:"direct_p99_ms"`
	CellP99Ms     float64 `json:"cell_p99_ms"`
	OverheadP99Ms float64 `json:"overhead_p99_ms"`
	NonStreaming  Mode    `json:"non_streaming"`
	Streaming     Mode    `json:"streaming"`
	GoMaxProcs    int     `json:"go_max_procs"`
	// GlobalTier is the global tier's added latency by prompt kind (nil
	// unless Config.Global).
	GlobalTier *GlobalTier `json:"global_tier,omitempty"`
	// TLSHop is what mutual TLS adds to the global tier's hop (nil unless
	// Config.TLS).
	TLSHop *TLSHop `json:"tls_hop,omitempty"`
	// Global is the whole path's headline and Path its details (nil
	// unless Config.Path).
	Global *GlobalSummary `json:"global,omitempty"`
	Path   *Path          `json:"path,omitempty"`
	// Picker is the cell as an endpoint picker against proxy mode (nil
	// unless Config.Picker).
	Picker *PickerReport `json:"picker,omitempty"`
}

// Run starts the pods and a cell, measures, and stops everything.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var pods []*pod
	defer func() {
		for _, p := range pods {
			p.close()
		}
	}()
	// Every router tokenizes with the demo tokenizer, from one file.
	dir, err := os.MkdirTemp("", "cellrouter-overhead-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tokFile := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(tokFile, tokenizer.DemoJSON(), 0o600); err != nil {
		return nil, err
	}
	tmpl, _ := tokenizer.ChatTemplateByName(tokenizer.DemoChatTemplate)
	bpe, err := tokenizer.Load(tokenizer.DemoJSON(), tokenizer.Options{})
	if err != nil {
		return nil, err
	}
	prompts := newPrompts(bpe, tmpl, cfg.PromptTokens)

	ccfg := cell.DefaultConfig()
	ccfg.HTTPAddr, ccfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	// The pods publish no events, so the cell's health checks are what
	// keep them alive past events.dead_after (a run with the whole path
	// lasts longer than that): once a second, 16 tiny requests.
	ccfg.HealthInterval = time.Second
	ccfg.Routing.TokenizerJSON, ccfg.Routing.ChatTemplate = tokFile, tokenizer.DemoChatTemplate
	if cfg.Picker {
		ccfg.EPPAddr = "127.0.0.1:0"
	}
	for i := 0; i < cfg.Pods; i++ {
		p, err := startPod(cfg.Chunks)
		if err != nil {
			return nil, err
		}
		pods = append(pods, p)
		ccfg.Pods = append(ccfg.Pods, cell.PodConfig{ID: fmt.Sprintf("pod-%02d", i), Address: p.addr()})
	}
	c, err := cell.New(ccfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go labelled("cell", func() { done <- c.Run(cctx) })
	defer func() { cancel(); <-done }()

	// Enough idle connections for every concurrent client: a client that
	// closes connections would measure the dialing, not the routers.
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * maxInFlight, DisableCompression: true}}
	defer client.CloseIdleConnections()
	rep := &Report{Requests: cfg.Requests, Pods: cfg.Pods, PromptTokens: cfg.PromptTokens, Prompt: cfg.Prompt}
	for _, stream := range []bool{false, true} {
		m, err := measure(ctx, client, cfg, prompts, "http://"+pods[0].addr(), "http://"+c.HTTPAddr(), stream)
		if err != nil {
			return nil, err
		}
		if stream {
			rep.Streaming = m
		} else {
			rep.NonStreaming = m
		}
	}
	rep.DirectP99Ms, rep.CellP99Ms, rep.OverheadP99Ms = rep.NonStreaming.Direct.P99Ms, rep.NonStreaming.Cell.P99Ms, rep.NonStreaming.OverheadP99Ms
	if cfg.Picker {
		if rep.Picker, err = measurePicker(ctx, client, cfg, prompts, pods[0].addr(), c.HTTPAddr(), c.EPPAddr()); err != nil {
			return nil, err
		}
	}
	if !cfg.Global {
		return rep, nil
	}
	sum, err := holdPrefixes(ctx, c, prompts)
	if err != nil {
		return nil, err
	}
	gs, err := startGlobals(ctx, c, sum, tokFile)
	if err != nil {
		return nil, err
	}
	defer gs.stop()
	if err := gs.checkSummaryPath(ctx, prompts); err != nil {
		return nil, err
	}
	if rep.GlobalTier, err = gs.measureGlobal(ctx, client, cfg, prompts, "http://"+c.HTTPAddr()); err != nil {
		return nil, err
	}
	if cfg.TLS {
		tg, stop, err := startTLSTier(ctx, ccfg, prompts, dir, tokFile)
		if err != nil {
			return nil, err
		}
		defer stop()
		if rep.TLSHop, err = gs.measureTLS(ctx, client, cfg, prompts, "http://"+c.HTTPAddr(), tg); err != nil {
			return nil, err
		}
	}
	// The whole path last: its ramp drives the routers past what they
	// sustain.
	if cfg.Path {
		bases := map[string]string{TierPod: "http://" + pods[0].addr(), TierCell: "http://" + c.HTTPAddr(), TierGlobal: "http://" + gs.local.HTTPAddr(),
			TierGlobalProbed: "http://" + gs.probed.HTTPAddr()}
		if rep.Path, err = runPath(ctx, client, cfg, prompts, bases); err != nil {
			return nil, err
		}
		rep.Global = globalSummary(rep.Path)
	}
	return rep, nil
}

// measure alternates direct and cell requests and returns both sides.
func measure(ctx context.Context, client *http.Client, cfg Config, p *prompts, direct, viaCell string, stream bool) (Mode, error) {
	var dl, cl []time.Duration
	for i := 0; i < cfg.Warmup+cfg.Requests; i++ {
		path, body := p.body(cfg.Prompt, i, cfg.Chunks, stream)
		for side, base := range []string{direct, viaCell} {
			d, err := call(ctx, client, base+path, body)
			if err != nil {
				return Mode{}, fmt.Errorf("overhead: %s request %d: %w", []string{"direct", "cell"}[side], i, err)
			}
			if i < cfg.Warmup {
				continue
			}
			if side == 0 {
				dl = append(dl, d)
			} else {
				cl = append(cl, d)
			}
		}
	}
	m := Mode{Direct: summarize(dl), Cell: summarize(cl)}
	m.OverheadP50Ms = m.Cell.P50Ms - m.Direct.P50Ms
	m.OverheadP99Ms = m.Cell.P99Ms - m.Direct.P99Ms
	return m, nil
}

// call sends one request to url and reads the whole response.
func call(ctx context.Context, client *http.Client, url string, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		return 0, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, err
	}
	return d, nil
}

func summarize(ds []time.Duration) Side {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))]) / 1e6 }
	return Side{P50Ms: q(0.5), P90Ms: q(0.9), P99Ms: q(0.99)}
}
