package overhead

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/blockhash"
	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/cell/events"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/gossip"
)

// GlobalMode is one prompt kind through the global tier: the cell alone,
// the global tier in front of it, and what the global tier adds.
type GlobalMode struct {
	Cell   Side `json:"cell"`
	Global Side `json:"global"`
	// AddedP50Ms and AddedP99Ms are global minus cell at that percentile.
	AddedP50Ms float64 `json:"added_p50_ms"`
	AddedP99Ms float64 `json:"added_p99_ms"`
}

// TokenizeCost is the global tier's tokenization alone, per request, in
// microseconds.
type TokenizeCost struct {
	P50Us float64 `json:"p50_us"`
	P99Us float64 `json:"p99_us"`
}

// GlobalTier is the global tier's part of the report: every prompt kind
// through a global tier that tokenizes in process (the model's
// tokenizer.json) and, for text and chat, through one that asks the cell's
// /tokenize. Every global request is routed by summary: the cell's pod
// holds the prompts' shared prefix, and the probe is a real gRPC call.
type GlobalTier struct {
	Tokens     GlobalMode `json:"tokens"`
	Text       GlobalMode `json:"text"`
	Chat       GlobalMode `json:"chat"`
	TextRemote GlobalMode `json:"text_remote"`
	ChatRemote GlobalMode `json:"chat_remote"`
	// TextMinusTokensP50Ms and TextMinusTokensP99Ms are what a text
	// prompt adds at the global tier over a token prompt (in process).
	TextMinusTokensP50Ms float64 `json:"text_minus_tokens_p50_ms"`
	TextMinusTokensP99Ms float64 `json:"text_minus_tokens_p99_ms"`
	// Tokenize is the global tier's tokenization alone, by kind and
	// source: text, chat, text_remote, chat_remote.
	Tokenize map[string]TokenizeCost `json:"tokenize"`
	// CacheHitRatio is the in-process tokenizers' segment cache hits over
	// lookups during the run (the chats' system message hits; text
	// prompts, one segment each and all different, miss).
	CacheHitRatio float64 `json:"cache_hit_ratio"`
	// PromptTokens is the text prompt's length under the tokenizer.
	PromptTokens int `json:"prompt_tokens"`
}

// globalSetup is the global tier in front of the measured cell.
type globalSetup struct {
	local, remote *global.Global
	// probed is local's twin that probes the cell although it is the only
	// candidate (global.Config.ProbeLone).
	probed *global.Global
	view   global.CellView
	stop   func()
}

// holdPrefixes makes pod-00 hold every kind's shared prefix, through the
// cell's event applier (as the pod's KV events would), and returns the
// summary of those blocks that the cell would gossip.
func holdPrefixes(ctx context.Context, c *cell.Cell, p *prompts) (*gossip.Summary, error) {
	b, err := gossip.NewBuilder(gossip.DefaultSummaryConfig())
	if err != nil {
		return nil, err
	}
	h := blockhash.DefaultHasher()
	seed := blockhash.Seed(blockhash.Keys{Model: model})
	for k, kind := range promptKinds {
		ids := p.prefixIDs[kind]
		blocks := len(ids)/h.BlockSize - 1 // the last one may differ at the prefix's end
		chain := h.Chain(seed, ids, nil)[:blocks]
		hs := make([]uint64, blocks)
		for i := range hs {
			hs[i] = uint64(chain[i])
		}
		batch := &events.Batch{Pod: "pod-00", Model: model, DPRank: -1, Seq: uint64(k), Events: []events.Event{{Kind: events.KindBlockStored,
			BlockHashes: hs, TokenIDs: ids[:blocks*h.BlockSize], BlockSize: h.BlockSize}}}
		if err := c.Applier().ApplyBatch(ctx, batch); err != nil {
			return nil, err
		}
		b.AddChain(chain)
	}
	return b.Build(), nil
}

// startGlobals starts the two global tiers over the cell.
func startGlobals(ctx context.Context, c *cell.Cell, sum *gossip.Summary, tokFile string) (*globalSetup, error) {
	view := global.CellView{ID: "cell-0", HTTPAddr: c.HTTPAddr(), GRPCAddr: c.GRPCAddr(), Alive: true, Summary: sum, SummaryBytes: sum.SizeBytes()}
	log := slog.New(slog.DiscardHandler)
	s := &globalSetup{view: view}
	var stops []func()
	s.stop = func() {
		for _, f := range stops {
			f()
		}
	}
	for _, kind := range []string{"local", "remote", "probed"} {
		local := kind != "remote"
		cfg := global.DefaultConfig()
		cfg.HTTPAddr, cfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.ProbeTimeout = 5 * time.Second
		cfg.Tokenize.RemoteTimeout = 5 * time.Second
		cfg.ProbeLone = kind == "probed"
		if local {
			cfg.Tokenize.Models = []global.ModelTokenizer{{Model: model, File: tokFile, ChatTemplate: tokenizer.DemoChatTemplate}}
		}
		g, err := global.New(cfg, global.StaticDirectory{view}, nil, log)
		if err != nil {
			s.stop()
			return nil, err
		}
		gctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go labelled(map[string]string{"local": "global", "remote": "global-remote", "probed": "global-probed"}[kind], func() { done <- g.Run(gctx) })
		stops = append(stops, func() { cancel(); <-done })
		switch kind {
		case "local":
			s.local = g
		case "remote":
			s.remote = g
		default:
			s.probed = g
		}
	}
	return s, nil
}

// checkSummaryPath makes sure every kind takes the summary path at every
// global tier, or the measurement would time the cold path.
func (s *globalSetup) checkSummaryPath(ctx context.Context, p *prompts) error {
	for _, g := range []*global.Global{s.local, s.remote, s.probed} {
		for _, kind := range promptKinds {
			d, err := g.Router().Decide(ctx, p.request(kind, 0))
			if err != nil || d.Cold {
				return fmt.Errorf("overhead: the global tier routes %s prompts cold (%v): the measurement needs the summary path", kind, err)
			}
		}
	}
	return nil
}

// request is request i of a kind as the global router sees it.
func (p *prompts) request(kind string, i int) *global.Request {
	switch kind {
	case PromptText:
		return &global.Request{Model: model, Prompt: p.prefix + fmt.Sprintf("Request %d asks where it should go.", i)}
	case PromptChat:
		return &global.Request{Model: model, Chat: true, Messages: []tokenizer.Message{{Role: "system", Content: p.prefix},
			{Role: "user", Content: fmt.Sprintf("Request %d asks where it should go.", i)}}}
	}
	ids := p.tokenIDs(i)
	out := make([]uint32, len(ids))
	for k, id := range ids {
		out[k] = uint32(id)
	}
	return &global.Request{Model: model, TokenIDs: out}
}

// measureGlobal alternates, per request, the cell alone and each global
// tier for every kind (non-streaming), so that noise hits all alike.
func (s *globalSetup) measureGlobal(ctx context.Context, client *http.Client, cfg Config, p *prompts, viaCell string) (*GlobalTier, error) {
	type route struct {
		name, kind string
		base       string
	}
	local, remote := "http://"+s.local.HTTPAddr(), "http://"+s.remote.HTTPAddr()
	routes := []route{
		{"cell/tokens", PromptTokens, viaCell}, {"global/tokens", PromptTokens, local},
		{"cell/text", PromptText, viaCell}, {"global/text", PromptText, local}, {"remote/text", PromptText, remote},
		{"cell/chat", PromptChat, viaCell}, {"global/chat", PromptChat, local}, {"remote/chat", PromptChat, remote},
	}
	lat := map[string][]time.Duration{}
	before := s.local.Router().Tokenizer().CacheStats()
	for i := 0; i < cfg.Warmup+cfg.Requests; i++ {
		for _, r := range routes {
			path, body := p.body(r.kind, i, 1, false)
			d, err := call(ctx, client, r.base+path, body)
			if err != nil {
				return nil, fmt.Errorf("overhead: %s request %d: %w", r.name, i, err)
			}
			if i >= cfg.Warmup {
				lat[r.name] = append(lat[r.name], d)
			}
		}
	}
	after := s.local.Router().Tokenizer().CacheStats()
	mode := func(cellSide, globalSide string) GlobalMode {
		m := GlobalMode{Cell: summarize(lat[cellSide]), Global: summarize(lat[globalSide])}
		m.AddedP50Ms, m.AddedP99Ms = m.Global.P50Ms-m.Cell.P50Ms, m.Global.P99Ms-m.Cell.P99Ms
		return m
	}
	gt := &GlobalTier{
		Tokens: mode("cell/tokens", "global/tokens"), Text: mode("cell/text", "global/text"), Chat: mode("cell/chat", "global/chat"),
		TextRemote: mode("cell/text", "remote/text"), ChatRemote: mode("cell/chat", "remote/chat"),
		PromptTokens: len(p.prefixIDs[PromptText]),
	}
	gt.TextMinusTokensP50Ms = gt.Text.AddedP50Ms - gt.Tokens.AddedP50Ms
	gt.TextMinusTokensP99Ms = gt.Text.AddedP99Ms - gt.Tokens.AddedP99Ms
	if n := (after.Hits - before.Hits) + (after.Misses - before.Misses); n > 0 {
		gt.CacheHitRatio = float64(after.Hits-before.Hits) / float64(n)
	}
	var err error
	gt.Tokenize, err = s.tokenizeCost(ctx, cfg, p)
	return gt, err
}

// tokenizeCost times the global tiers' tokenization alone on fresh
// requests (numbered after the measured ones, so no remote answer is
// cached), in process and through the cell's /tokenize.
func (s *globalSetup) tokenizeCost(ctx context.Context, cfg Config, p *prompts) (map[string]TokenizeCost, error) {
	out := map[string]TokenizeCost{}
	views := []global.CellView{s.view}
	for _, c := range []struct {
		name, kind string
		g          *global.Global
	}{{"text", PromptText, s.local}, {"chat", PromptChat, s.local}, {"text_remote", PromptText, s.remote}, {"chat_remote", PromptChat, s.remote}} {
		tk := c.g.Router().Tokenizer()
		var ds []time.Duration
		for i := 0; i < cfg.Requests; i++ {
			req := p.request(c.kind, cfg.Warmup+cfg.Requests+i)
			start := time.Now()
			if _, _, err := tk.Tokenize(ctx, req, views, nil); err != nil {
				return nil, fmt.Errorf("overhead: tokenize %s: %w", c.name, err)
			}
			ds = append(ds, time.Since(start))
		}
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		q := func(f float64) float64 { return float64(ds[int(f*float64(len(ds)-1))]) / 1e3 }
		out[c.name] = TokenizeCost{P50Us: q(0.5), P99Us: q(0.99)}
	}
	return out, nil
}
