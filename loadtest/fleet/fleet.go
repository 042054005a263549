package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/cellrouter/cellrouter/cachekey/tokenizer"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/global"
	"github.com/cellrouter/cellrouter/internal/telemetry"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/loadtest/enginesim"
)

// Config describes the local fleet.
type Config struct {
	// Cells is the number of cells; PodsPerCell the simulated pods in each.
	Cells, PodsPerCell int
	// Pod configures every simulated pod (model, cache size, timing).
	Pod enginesim.Config
	// GlobalHTTPAddr and GlobalGRPCAddr are where the global endpoint
	// listens (port 0 picks one).
	GlobalHTTPAddr, GlobalGRPCAddr string
	// SummaryInterval is how often cells publish their summaries.
	SummaryInterval time.Duration
	// ProbeTimeout, when positive, bounds the global tier's probes in
	// place of its default (tests on a loaded machine lengthen it).
	ProbeTimeout time.Duration
	// Routing is the cells' routing configuration (its tokenizer_json and
	// chat_template are set from the fields below).
	Routing cell.RoutingConfig
	// TokenizerJSON and ChatTemplate are the model's tokenizer: every pod
	// tokenizes text prompts and chats with them (enginesim.HFTokenizer),
	// and so do the cells and the global tier, in process unless told
	// otherwise below. "" means the demo tokenizer (tokenizer.DemoJSON,
	// written to a temporary file) with its chat template.
	TokenizerJSON, ChatTemplate string
	// CellsTokenizeRemote makes the cells ask their pods' /tokenize
	// instead of loading the tokenizer; GlobalTokenizeRemote makes the
	// global tier ask the cells' /tokenize.
	CellsTokenizeRemote, GlobalTokenizeRemote bool
	// Log receives the parts' logs (nil: discarded).
	Log *slog.Logger
	// Secure runs the fleet as a deployment should: the global endpoint
	// takes API keys (one tenant, its key in Fleet.APIKey), the hops from
	// the global tier to the cells are mutual TLS with certificates of a
	// CA made for the fleet (the cells let in nothing else), and gossip is
	// encrypted with a keyring file. Everything is generated into the
	// fleet's temporary directory at start.
	Secure bool
	// ReloadInterval is how often a Secure fleet's parts read the key
	// file, TLS files and keyring again (0: the daemons' default).
	ReloadInterval time.Duration
	// TracerProvider, when set, gives each cell its own tracer provider:
	// it is called once per cell with the cell's identity (service "celld",
	// instance and cell its id), so a tracing backend tells the cells of
	// the one process apart. The global router always uses the process's
	// global provider. Nil: every part uses the global provider.
	TracerProvider func(telemetry.Identity) (trace.TracerProvider, error)
}

// DefaultConfig is the demo fleet: two cells of four pods.
func DefaultConfig() Config {
	p := enginesim.DefaultConfig()
	p.TimeScale = 0.1 // ten times faster than the modelled engine
	return Config{
		Cells: 2, PodsPerCell: 4, Pod: p,
		GlobalHTTPAddr: "127.0.0.1:0", GlobalGRPCAddr: "127.0.0.1:0",
		SummaryInterval: 500 * time.Millisecond,
		Routing:         cell.DefaultRoutingConfig(),
	}
}

// Validate names the first bad field.
func (c Config) Validate() error {
	switch {
	case c.Cells < 1 || c.Cells > 64:
		return fmt.Errorf("fleet: Cells = %d, want 1..64", c.Cells)
	case c.PodsPerCell < 1 || c.PodsPerCell > 256:
		return fmt.Errorf("fleet: PodsPerCell = %d, want 1..256", c.PodsPerCell)
	case c.SummaryInterval <= 0:
		return fmt.Errorf("fleet: SummaryInterval = %v, want > 0", c.SummaryInterval)
	}
	return nil
}

// Fleet is a running local fleet. Close stops it.
type Fleet struct {
	// Global is the global router; Cells the cells; Pods each cell's pods.
	Global *global.Daemon
	Cells  []*cell.Cell
	Pods   [][]*enginesim.Pod

	// APIKey is the key of a Secure fleet's tenant (scopes inference and
	// admin); "" otherwise. KeyFile is its key file, CA the CA of the
	// tier's certificates (nil unless Secure).
	APIKey      string
	KeyFile     string
	KeyringFile string
	CA          *tlsconf.EphemeralCA
	// AdminTLS are the files of an operator's client certificate (role
	// admin) of a Secure fleet: with them, curl and grpcurl reach a
	// cell's control plane, /metrics and gRPC reflection, which the
	// cells serve over mutual TLS only. Empty unless Secure.
	AdminTLS tlsconf.Config

	fleets []*enginesim.Fleet
	tmpDir string // holds the demo tokenizer and secrets; removed by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	errs   chan error
	// closed makes Close idempotent; closeErr is its first result.
	closed   sync.Once
	closeErr error
}

// Start builds and starts the fleet; it returns once every part serves and
// the global router holds a summary of every cell (or ctx ends). On an
// error it has already closed what it started: the caller need not (and
// may, Close being idempotent) call Close.
func Start(ctx context.Context, cfg Config) (f *Fleet, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rctx, cancel := context.WithCancel(context.Background())
	f = &Fleet{cancel: cancel, errs: make(chan error, 2*cfg.Cells+2)}
	defer func() {
		if err != nil {
			f.Close()
		}
	}()
	tokFile, tmpl, err := f.tokenizer(cfg)
	if err != nil {
		return f, err
	}
	hf, err := enginesim.LoadHFTokenizer(tokFile, tmpl)
	if err != nil {
		return f, err
	}
	gcfg := global.DefaultConfig()
	gcfg.HTTPAddr, gcfg.GRPCAddr, gcfg.BlockSize = cfg.GlobalHTTPAddr, cfg.GlobalGRPCAddr, cfg.Pod.BlockSize
	// The fleet's cells share this host: the probes' round trips to them
	// differ by scheduling noise, not distance, so distance weighs nothing
	// in the choice (a millisecond would weigh a block).
	gcfg.Choose.RTTWeight = 0
	if cfg.ProbeTimeout > 0 {
		gcfg.ProbeTimeout = cfg.ProbeTimeout
	}
	if !cfg.GlobalTokenizeRemote {
		gcfg.Tokenize.Models = []global.ModelTokenizer{{Model: cfg.Pod.Model, File: tokFile, ChatTemplate: tmpl}}
	}
	pool := global.DefaultPoolConfig()
	pool.Bind = "127.0.0.1:0"
	var sec *secrets
	if cfg.Secure {
		if f.tmpDir == "" {
			if f.tmpDir, err = os.MkdirTemp("", "cellrouter-fleet-"); err != nil {
				return f, fmt.Errorf("fleet: %w", err)
			}
		}
		if sec, err = newSecrets(f.tmpDir); err != nil {
			return f, fmt.Errorf("fleet: secrets: %w", err)
		}
		f.APIKey, f.KeyFile, f.KeyringFile, f.CA, f.AdminTLS = sec.apiKey, sec.keyFile, sec.keyring, sec.ca, sec.admin
		gcfg.Security.KeyFile, gcfg.Security.TLS, gcfg.Security.ReloadInterval = sec.keyFile, sec.global, cfg.ReloadInterval
		pool.KeyringFile, pool.ReloadInterval = sec.keyring, cfg.ReloadInterval
	}
	if f.Global, err = global.NewDaemon(gcfg, pool, log.With("part", "globald")); err != nil {
		return f, err
	}
	f.run(rctx, "globald", f.Global.Run)
	for i := 0; i < cfg.Cells; i++ {
		fc := enginesim.DefaultFleetConfig()
		fc.Pods, fc.Pod = cfg.PodsPerCell, cfg.Pod
		fc.Pod.ID = fmt.Sprintf("c%d-pod", i)
		fc.Pod.Tokenizer = hf
		sim, err := enginesim.StartFleet(fc)
		if err != nil {
			return f, err
		}
		f.fleets = append(f.fleets, sim)
		f.Pods = append(f.Pods, sim.Pods())
		ccfg := cell.DefaultConfig()
		ccfg.CellID = fmt.Sprintf("cell-%d", i)
		ccfg.HTTPAddr, ccfg.GRPCAddr = "127.0.0.1:0", "127.0.0.1:0"
		ccfg.Events.BlockSize = cfg.Pod.BlockSize
		ccfg.Events.DefaultModel = cfg.Pod.Model
		ccfg.Routing = cfg.Routing
		ccfg.Routing.TokenizerJSON, ccfg.Routing.ChatTemplate = "", ""
		if !cfg.CellsTokenizeRemote {
			ccfg.Routing.TokenizerJSON, ccfg.Routing.ChatTemplate = tokFile, tmpl
		}
		ccfg.Gossip.Bind, ccfg.Gossip.Seeds = "127.0.0.1:0", []string{f.Global.GossipAddr()}
		ccfg.Gossip.SummaryInterval = cfg.SummaryInterval
		if sec != nil {
			if ccfg.TLS.Config, err = sec.cell(ccfg.CellID); err != nil {
				return f, fmt.Errorf("fleet: secrets: %w", err)
			}
			ccfg.Gossip.KeyringFile, ccfg.Auth.ReloadInterval = sec.keyring, cfg.ReloadInterval
		}
		for _, p := range sim.Pods() {
			ccfg.Pods = append(ccfg.Pods, cell.PodConfig{ID: p.ID(), Address: p.HTTPAddr(), Role: string(p.Role()),
				ZMQEndpoint: p.ZMQEndpoint(), ReplayEndpoint: p.ReplayEndpoint(), KVBlocks: cfg.Pod.Blocks})
		}
		var opts []cell.Option
		if cfg.TracerProvider != nil {
			tp, err := cfg.TracerProvider(telemetry.Identity{Service: "celld", Instance: ccfg.CellID, Cell: ccfg.CellID})
			if err != nil {
				return f, fmt.Errorf("fleet: %s: tracing: %w", ccfg.CellID, err)
			}
			opts = append(opts, cell.WithTracerProvider(tp))
		}
		c, err := cell.New(ccfg, log.With("part", ccfg.CellID), opts...)
		if err != nil {
			return f, err
		}
		f.Cells = append(f.Cells, c)
		f.run(rctx, ccfg.CellID, c.Run)
	}
	for {
		known := 0
		for _, v := range f.Global.Router().Cells() {
			if v.Alive && v.Summary != nil {
				known++
			}
		}
		if known == cfg.Cells {
			return f, nil
		}
		select {
		case <-ctx.Done():
			return f, ctx.Err()
		case err := <-f.errs:
			return f, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tokenizer returns the fleet's tokenizer file and chat template, writing
// the demo tokenizer to a temporary directory when none is configured.
func (f *Fleet) tokenizer(cfg Config) (file, template string, err error) {
	if cfg.TokenizerJSON != "" {
		template = cfg.ChatTemplate
		if template == "" {
			template = tokenizer.DemoChatTemplate
		}
		return cfg.TokenizerJSON, template, nil
	}
	if f.tmpDir, err = os.MkdirTemp("", "cellrouter-fleet-"); err != nil {
		return "", "", fmt.Errorf("fleet: %w", err)
	}
	file = filepath.Join(f.tmpDir, "tokenizer.json")
	if err := os.WriteFile(file, tokenizer.DemoJSON(), 0o600); err != nil {
		return "", "", fmt.Errorf("fleet: %w", err)
	}
	return file, tokenizer.DemoChatTemplate, nil
}

func (f *Fleet) run(ctx context.Context, name string, run func(context.Context) error) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		if err := run(ctx); err != nil {
			f.errs <- fmt.Errorf("fleet: %s: %w", name, err)
		}
	}()
}

// Endpoint is the global OpenAI endpoint's base URL.
func (f *Fleet) Endpoint() string { return "http://" + f.Global.HTTPAddr() }

// Close stops every part and waits for them. Calls after the first do
// nothing and return its result.
func (f *Fleet) Close() error {
	f.closed.Do(func() { f.closeErr = f.close() })
	return f.closeErr
}

func (f *Fleet) close() error {
	f.cancel()
	f.wg.Wait()
	var errs []error
	for _, s := range f.fleets {
		errs = append(errs, s.Close())
	}
	if f.tmpDir != "" {
		errs = append(errs, os.RemoveAll(f.tmpDir))
	}
	close(f.errs)
	for err := range f.errs {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
