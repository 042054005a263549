package overhead

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// TLSHop is what mutual TLS costs on the hop from the global tier to the
// cell (the gRPC probe and the HTTP hand-off): token requests through a
// global tier whose hop is plaintext and through one whose hop is mutual
// TLS (to a second cell with the same pods and cached prefix), interleaved
// one by one with the cell alone. Connections are kept alive, as in
// production, so the handshakes are amortised and what remains is the
// per-request cost of encryption.
type TLSHop struct {
	// Plain and MutualTLS are each global tier against the cell alone.
	Plain     GlobalMode `json:"plain"`
	MutualTLS GlobalMode `json:"mutual_tls"`
	// AddedP50Ms and AddedP99Ms are what mutual TLS adds: the mutual-TLS
	// global tier minus the plaintext one at that percentile.
	AddedP50Ms float64 `json:"added_p50_ms"`
	AddedP99Ms float64 `json:"added_p99_ms"`
}

// startTLSTier starts a second cell over the same pods, serving mutual TLS
// with certificates of a CA made for the run in dir, holding the same
// prefixes, and a global tier that reaches it over mutual TLS.
func startTLSTier(ctx context.Context, ccfg cell.Config, p *prompts, dir, tokFile string) (*global.Global, func(), error) {
	ca, err := tlsconf.NewEphemeralCA("overhead tier")
	if err != nil {
		return nil, nil, err
	}
	if ccfg.TLS.Config, err = ca.WriteFiles(dir, "cell-tls", tlsconf.CertOptions{URIs: []string{auth.RoleURI(auth.RoleCell)}}); err != nil {
		return nil, nil, err
	}
	gfiles, err := ca.WriteFiles(dir, "globald", tlsconf.CertOptions{URIs: []string{auth.RoleURI(auth.RoleGlobal)}})
	if err != nil {
		return nil, nil, err
	}
	ccfg.CellID = "cell-tls"
	c, err := cell.New(ccfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, nil, err
	}
	cctx, ccancel := context.WithCancel(ctx)
	cdone := make(chan error, 1)
	go func() { cdone <- c.Run(cctx) }()
	stops := []func(){func() { ccancel(); <-cdone }}
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	sum, err := holdPrefixes(ctx, c, p)
	if err != nil {
		stop()
		return nil, nil, err
	}
	view := global.CellView{ID: "cell-tls", HTTPAddr: c.HTTPAddr(), GRPCAddr: c.GRPCAddr(), Alive: true, Summary: sum, SummaryBytes: sum.SizeBytes()}
	gcfg := global.DefaultConfig()
	gcfg.HTTPAddr, gcfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
	gcfg.ProbeTimeout = 5 * time.Second
	gcfg.Tokenize.Models = []global.ModelTokenizer{{Model: model, File: tokFile, ChatTemplate: tokenizer.DemoChatTemplate}}
	gcfg.Security.TLS = gfiles
	g, err := global.New(gcfg, global.StaticDirectory{view}, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		stop()
		return nil, nil, err
	}
	gctx, gcancel := context.WithCancel(ctx)
	gdone := make(chan error, 1)
	go func() { gdone <- g.Run(gctx) }()
	stops = append(stops, func() { gcancel(); <-gdone })
	d, err := g.Router().Decide(ctx, p.request(PromptTokens, 0))
	if err != nil || d.Cold || len(d.Answers) == 0 || d.Answers[0].Err != nil {
		stop()
		return nil, nil, fmt.Errorf("overhead: the mutual-TLS global tier does not probe the cell (%v): the measurement needs the summary path", err)
	}
	return g, stop, nil
}

// measureTLS alternates, per request, the cell alone, the plaintext global
// tier and the mutual-TLS one, with token prompts, non-streaming.
func (s *globalSetup) measureTLS(ctx context.Context, client *http.Client, cfg Config, p *prompts, viaCell string, tlsGlobal *global.Global) (*TLSHop, error) {
	routes := []struct{ name, base string }{
		{"cell", viaCell}, {"plain", "http://" + s.local.HTTPAddr()}, {"mtls", "http://" + tlsGlobal.HTTPAddr()},
	}
	lat := map[string][]time.Duration{}
	for i := 0; i < cfg.Warmup+cfg.Requests; i++ {
		for _, r := range routes {
			path, body := p.body(PromptTokens, i, 1, false)
			d, err := call(ctx, client, r.base+path, body)
			if err != nil {
				return nil, fmt.Errorf("overhead: tls %s request %d: %w", r.name, i, err)
			}
			if i >= cfg.Warmup {
				lat[r.name] = append(lat[r.name], d)
			}
		}
	}
	mode := func(side string) GlobalMode {
		m := GlobalMode{Cell: summarize(lat["cell"]), Global: summarize(lat[side])}
		m.AddedP50Ms, m.AddedP99Ms = m.Global.P50Ms-m.Cell.P50Ms, m.Global.P99Ms-m.Cell.P99Ms
		return m
	}
	h := &TLSHop{Plain: mode("plain"), MutualTLS: mode("mtls")}
	h.AddedP50Ms = h.MutualTLS.Global.P50Ms - h.Plain.Global.P50Ms
	h.AddedP99Ms = h.MutualTLS.Global.P99Ms - h.Plain.Global.P99Ms
	return h, nil
}
