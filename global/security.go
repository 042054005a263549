package global

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/reload"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// SecurityConfig configures who may use globald and how it reaches cells.
type SecurityConfig struct {
	// KeyFile is the API key file (package internal/auth documents it); ""
	// turns API keys off. With it the data plane needs a key with the
	// inference scope, the control plane and /metrics one with admin; the
	// tenant's limits and cache isolation apply here, where the request
	// enters, and the tenant travels to the cell in edge.TenantHeader.
	KeyFile string
	// ReloadInterval is how often the key file and the TLS files are read
	// again (0: reload.DefaultInterval).
	ReloadInterval time.Duration
	// TLS is globald's certificate and key and the CA of the cells' (and
	// their callers') certificates: with it every probe, hand-off and
	// tokenize call to a cell is mutual TLS, and the cell believes the
	// tenant globald names. ServerName, when the cells' certificates do
	// not carry the addresses they gossip, is the name they carry.
	TLS tlsconf.Config
	// ServeTLS serves globald's own HTTP and gRPC listeners over TLS with
	// TLS's certificate; its clients need no certificate of their own.
	ServeTLS bool
}

func (s SecurityConfig) validate() error {
	if err := s.TLS.Validate("tls", false); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if s.ServeTLS && !s.TLS.Enabled() {
		return fmt.Errorf("%w: serve_tls = true: needs tls (a certificate to serve with)", ErrInvalidConfig)
	}
	if s.ReloadInterval < 0 {
		return fmt.Errorf("%w: reload_interval = %v: must not be negative", ErrInvalidConfig, s.ReloadInterval)
	}
	return nil
}

// security is globald's edge: the guard, its metrics, the TLS source, and
// the watchers that reload their files.
type security struct {
	cfg      SecurityConfig
	m        *edge.Metrics
	guard    *edge.Guard
	limits   edge.Limits
	tls      *tlsconf.Source // nil: plaintext to the cells
	budget   *edge.Budget    // the data plane's buffered request bodies
	watchers []*reload.Watcher
}

func newSecurity(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*security, error) {
	sc := cfg.Security
	s := &security{cfg: sc, m: edge.NewMetrics(reg), limits: cfg.Limits, budget: edge.NewBudget(cfg.Limits.MaxBufferedBytes)}
	// Without mutual TLS to the cells, a cell cannot believe globald's
	// word for the tenant, so the key goes along for the cell to check.
	s.guard = edge.NewGuard(edge.GuardConfig{KeepAuthorization: !sc.TLS.Enabled(), Budget: s.budget,
		TenantMaxConcurrent: cfg.Limits.TenantMaxConcurrent}, s.m)
	watch := func(what string, paths []string, load func([][]byte) error) error {
		w, err := reload.New(paths, sc.ReloadInterval, load, func(err error) {
			log.Warn("reload refused; the previous files stay in force", "what", what, "err", err)
		})
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInvalidConfig, what, err)
		}
		s.watchers = append(s.watchers, w)
		return nil
	}
	if sc.KeyFile != "" {
		if err := watch("key file", []string{sc.KeyFile}, s.guard.LoadKeyFile); err != nil {
			return nil, err
		}
	}
	if sc.TLS.Enabled() {
		var err error
		if s.tls, err = tlsconf.NewSource(sc.TLS); err != nil {
			return nil, fmt.Errorf("%w: tls: %v", ErrInvalidConfig, err)
		}
		if err := watch("tls", s.tls.Paths(), func(data [][]byte) error {
			err := s.tls.Load(data)
			s.m.Reloaded("tls", err)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// cellTLS is the client configuration for the cells, nil for plaintext.
func (s *security) cellTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	return s.tls.ClientConfig()
}

// grpcOptions are the gRPC server's limits, guard (Complete needs
// inference, the rest of GlobalService admin) and, with ServeTLS, its
// credentials.
func (s *security) grpcOptions() []grpc.ServerOption {
	svc := globalv1.File_api_global_v1_global_proto.Services().ByName("GlobalService")
	scopes := edge.Scopes{}.Add(svc, auth.ScopeAdmin)
	scopes["/"+string(svc.FullName())+"/Complete"] = auth.ScopeInference
	opts := append(edge.GRPCServerOptions(s.limits, s.m), grpc.ChainUnaryInterceptor(s.guard.UnaryInterceptor(scopes)),
		grpc.ChainStreamInterceptor(s.guard.StreamInterceptor(scopes)))
	if s.cfg.ServeTLS {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.serverConfig("h2"))))
	}
	return opts
}

// eppOptions are the endpoint picker server's limits and, with ServeTLS,
// its credentials: those of the gRPC server without its guard (the
// gateway's connection vouches for no client; each request is admitted by
// the key in its own headers).
func (s *security) eppOptions() []grpc.ServerOption {
	opts := edge.GRPCServerOptions(s.limits, s.m)
	if s.cfg.ServeTLS {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.serverConfig("h2"))))
	}
	return opts
}

// serverConfig serves with globald's certificate, asking clients for none.
func (s *security) serverConfig(proto string) *tls.Config {
	c := s.tls.ServerConfig(proto)
	inner := c.GetConfigForClient
	c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		sc, err := inner(h)
		if err != nil {
			return nil, err
		}
		sc = sc.Clone()
		sc.ClientAuth, sc.ClientCAs = tls.NoClientCert, nil
		return sc, nil
	}
	return c
}

// listenHTTP opens the HTTP listener: counted timeouts, TLS with ServeTLS.
func (s *security) listenHTTP(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if s.cfg.ServeTLS {
		cfg = s.serverConfig("http/1.1")
	}
	return edge.WrapListener(l, s.limits, s.m, cfg), nil
}

// httpServer returns the HTTP server of h behind the limits.
func (s *security) httpServer(h http.Handler) *http.Server {
	return edge.NewHTTPServer(edge.Harden(s.limits, s.m, h), s.limits, nil)
}

// run reloads changed files and returns memory after floods of bodies
// until ctx ends.
func (s *security) run(ctx context.Context, wg *sync.WaitGroup) {
	for _, w := range s.watchers {
		wg.Add(1)
		go func() { defer wg.Done(); w.Run(ctx) }()
	}
	wg.Add(1)
	go func() { defer wg.Done(); s.budget.Trim(ctx, nil) }()
}
