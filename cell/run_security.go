package cell

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

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/edge"
	"github.com/cellrouter/cellrouter/internal/reload"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// AuthConfig configures API keys (package internal/auth documents the key
// file).
type AuthConfig struct {
	// KeyFile is the API key file; "" turns API keys off. Every request,
	// but health, readiness and the OpenAPI document, then needs a key
	// with its scope, unless it comes from a peer (tls with a client
	// certificate of ca_file), whose tenant the cell believes.
	KeyFile string `yaml:"key_file"`
	// ReloadInterval is how often the key file, the TLS files and the
	// gossip keyring are read again; a change applies without a restart.
	// Default 2s.
	ReloadInterval time.Duration `yaml:"reload_interval"`
}

// TLSConfig configures the cell's TLS: mutual TLS of its HTTP and gRPC
// servers (the hop from globald, and any other caller), and TLS to its
// pods.
type TLSConfig struct {
	// Config is the cell's certificate, key and CA: cert_file, key_file,
	// ca_file and client_auth (require, the default: only peers with a
	// certificate of ca_file get in; verify_if_given: clients without a
	// certificate may come with API keys). Empty: plaintext servers.
	tlsconf.Config `yaml:",inline"`
	// Pods makes calls to the pods HTTPS: ca_file verifies them (with
	// server_name, or the address's host), cert_file and key_file are
	// presented when the pods ask for a client certificate.
	Pods tlsconf.Config `yaml:"pods"`
	// DefaultPeerRoles are the roles of a client certificate of ca_file
	// that names none (no urn:cellrouter:role: URI; internal/auth
	// documents the convention): global (the default: inference with the
	// tenant it names, and the probe), cell (a replica's snapshot),
	// publisher (events, for the pods its certificate names), admin, or
	// none.
	DefaultPeerRoles []string `yaml:"default_peer_roles"`
}

// peerRoles parses tls.default_peer_roles; nil when unset (the guard's
// default, global).
func (c TLSConfig) peerRoles() ([]auth.Role, error) {
	var out []auth.Role
	for i, s := range c.DefaultPeerRoles {
		r, err := auth.ParseRole(s)
		if err != nil {
			return nil, fmt.Errorf("%w: tls.default_peer_roles[%d] = %q: want global, cell, publisher, admin or none", ErrConfig, i, s)
		}
		out = append(out, r)
	}
	return out, nil
}

// LimitsConfig bounds what one client may hold of the cell's servers (see
// edge.Limits); the body limit is routing.max_body_bytes.
type LimitsConfig struct {
	// MaxHeaderBytes bounds a request's head (431). Default 64 KiB.
	MaxHeaderBytes int `yaml:"max_header_bytes"`
	// ReadHeaderTimeout bounds the wait for a request's head and the TLS
	// handshake. Default 10s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`
	// BodyTimeout bounds the wait for a request's body (408). Default 60s.
	BodyTimeout time.Duration `yaml:"body_timeout"`
	// IdleTimeout closes idle keep-alive and gRPC connections. Default 2m.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
	// MaxConcurrentStreams bounds the requests each server serves at once
	// (503 / Unavailable past it). Default 4096.
	MaxConcurrentStreams int `yaml:"max_concurrent_streams"`
	// MaxBufferedBytes bounds the data-plane request body bytes the cell
	// holds at once, all requests together (503 with Retry-After past it;
	// see edge.Budget). 0 is unlimited, otherwise at least
	// routing.max_body_bytes. Default 128 MiB.
	MaxBufferedBytes int64 `yaml:"max_buffered_bytes"`
	// TenantMaxConcurrent bounds the requests in flight of a tenant whose
	// key file entry sets no max_concurrent, for clients that call the
	// cell directly (429 past it); 0 is unlimited. Default 128.
	TenantMaxConcurrent int `yaml:"tenant_max_concurrent"`
}

func defaultLimits() LimitsConfig {
	d := edge.DefaultLimits()
	return LimitsConfig{MaxHeaderBytes: d.MaxHeaderBytes, ReadHeaderTimeout: d.ReadHeaderTimeout, BodyTimeout: d.BodyTimeout,
		IdleTimeout: d.IdleTimeout, MaxConcurrentStreams: d.MaxConcurrentStreams, MaxBufferedBytes: d.MaxBufferedBytes,
		TenantMaxConcurrent: d.TenantMaxConcurrent}
}

// EdgeLimits returns the servers' limits: the limits section and
// routing.max_body_bytes.
func (c Config) EdgeLimits() edge.Limits {
	return edge.Limits{MaxBodyBytes: c.Routing.MaxBodyBytes, MaxHeaderBytes: c.Limits.MaxHeaderBytes,
		ReadHeaderTimeout: c.Limits.ReadHeaderTimeout, BodyTimeout: c.Limits.BodyTimeout, IdleTimeout: c.Limits.IdleTimeout,
		MaxConcurrentStreams: c.Limits.MaxConcurrentStreams, MaxBufferedBytes: c.Limits.MaxBufferedBytes,
		TenantMaxConcurrent: c.Limits.TenantMaxConcurrent}
}

// SetEdgeLimits sets the limits section and routing.max_body_bytes from l
// (celld's flags).
func (c *Config) SetEdgeLimits(l edge.Limits) {
	c.Routing.MaxBodyBytes = l.MaxBodyBytes
	c.Limits = LimitsConfig{MaxHeaderBytes: l.MaxHeaderBytes, ReadHeaderTimeout: l.ReadHeaderTimeout, BodyTimeout: l.BodyTimeout,
		IdleTimeout: l.IdleTimeout, MaxConcurrentStreams: l.MaxConcurrentStreams, MaxBufferedBytes: l.MaxBufferedBytes,
		TenantMaxConcurrent: l.TenantMaxConcurrent}
}

func (c Config) validateSecurity() error {
	if err := c.EdgeLimits().Validate("limits"); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.TLS.Config.Validate("tls", false); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.TLS.Pods.Validate("tls.pods", true); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if _, err := c.TLS.peerRoles(); err != nil {
		return err
	}
	if c.Auth.ReloadInterval < 0 {
		return fmt.Errorf("%w: auth.reload_interval = %v: must not be negative", ErrConfig, c.Auth.ReloadInterval)
	}
	if c.Gossip.KeyringFile != "" && c.Gossip.SecretKey != "" {
		return fmt.Errorf("%w: gossip.keyring_file = %q: set it or gossip.secret_key, not both", ErrConfig, c.Gossip.KeyringFile)
	}
	return nil
}

// security is the cell's edge: the guard and its metrics, the TLS sources,
// and the watchers that reload their files while the cell runs.
type security struct {
	log          *slog.Logger
	m            *edge.Metrics
	guard        *edge.Guard
	limits       edge.Limits
	server       *tlsconf.Source // nil: plaintext servers
	pods         *tlsconf.Source // nil: plain HTTP to the pods
	budget       *edge.Budget    // the data plane's buffered request bodies
	watchers     []*reload.Watcher
	requireCerts bool
}

// newSecurity loads the key file and the TLS files, refusing to start on a
// bad one.
func newSecurity(cfg Config, log *slog.Logger, reg prometheus.Registerer) (*security, error) {
	s := &security{log: log, m: edge.NewMetrics(reg), limits: cfg.EdgeLimits()}
	roles, err := cfg.TLS.peerRoles()
	if err != nil {
		return nil, err
	}
	s.budget = edge.NewBudget(s.limits.MaxBufferedBytes)
	s.guard = edge.NewGuard(edge.GuardConfig{TrustPeers: cfg.TLS.Enabled(), DefaultPeerRoles: roles, Budget: s.budget,
		TenantMaxConcurrent: s.limits.TenantMaxConcurrent}, s.m)
	interval := cfg.Auth.ReloadInterval
	watch := func(what string, paths []string, load func([][]byte) error) error {
		w, err := reload.New(paths, interval, load, func(err error) {
			log.Warn("reload refused; the previous files stay in force", "what", what, "err", err)
		})
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrConfig, what, err)
		}
		s.watchers = append(s.watchers, w)
		return nil
	}
	if cfg.Auth.KeyFile != "" {
		if err := watch("auth.key_file", []string{cfg.Auth.KeyFile}, s.guard.LoadKeyFile); err != nil {
			return nil, err
		}
	}
	if cfg.TLS.Enabled() {
		if s.server, err = tlsconf.NewSource(cfg.TLS.Config); err != nil {
			return nil, fmt.Errorf("%w: tls: %v", ErrConfig, err)
		}
		if err := watch("tls", s.server.Paths(), s.tlsLoader(s.server)); err != nil {
			return nil, err
		}
		s.requireCerts = cfg.TLS.ClientAuth != tlsconf.VerifyClientCertIfGiven
	}
	if cfg.TLS.Pods.Enabled() {
		if s.pods, err = tlsconf.NewSource(cfg.TLS.Pods); err != nil {
			return nil, fmt.Errorf("%w: tls.pods: %v", ErrConfig, err)
		}
		if err := watch("tls.pods", s.pods.Paths(), s.tlsLoader(s.pods)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *security) tlsLoader(src *tlsconf.Source) func([][]byte) error {
	return func(data [][]byte) error {
		err := src.Load(data)
		s.m.Reloaded("tls", err)
		return err
	}
}

// podTLS is the client configuration for the pods, nil for plain HTTP.
func (s *security) podTLS() *tls.Config {
	if s.pods == nil {
		return nil
	}
	return s.pods.ClientConfig()
}

// podScheme is "https" with TLS to the pods, else "http".
func (s *security) podScheme() string {
	if s.pods == nil {
		return "http"
	}
	return "https"
}

// grpcOptions are the gRPC server's credentials, limits and guard: the
// control plane needs admin, but for the probe (Route: route) and the
// snapshot a replica starts from (StreamSnapshot: replica), which admin
// includes; publishing events needs events.
func (s *security) grpcOptions() []grpc.ServerOption {
	cellSvc := cellv1.File_api_cell_v1_cell_proto.Services().ByName("CellService")
	scopes := edge.Scopes{}.
		Add(cellSvc, auth.ScopeAdmin).
		Set(cellSvc, "Route", auth.ScopeRoute).
		Set(cellSvc, "StreamSnapshot", auth.ScopeReplica).
		Add(eventsv1.File_api_events_v1_events_proto.Services().ByName("EventPublisher"), auth.ScopeEvents)
	opts := edge.GRPCServerOptions(s.limits, s.m)
	opts = append(opts, grpc.ChainUnaryInterceptor(s.guard.UnaryInterceptor(scopes)),
		grpc.ChainStreamInterceptor(s.guard.StreamInterceptor(scopes)))
	if s.server != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(s.server.ServerConfig("h2"))))
	}
	return opts
}

// listenHTTP opens the HTTP listener: counted timeouts, TLS when set.
func (s *security) listenHTTP(addr string) (net.Listener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	var cfg *tls.Config
	if s.server != nil {
		cfg = s.server.ServerConfig("http/1.1")
	}
	return edge.WrapListener(l, s.limits, s.m, cfg), nil
}

// httpServer returns the HTTP server of h behind the limits.
func (s *security) httpServer(h http.Handler) *http.Server {
	return edge.NewHTTPServer(edge.Harden(s.limits, s.m, h), s.limits, nil)
}

// authenticated reports whether every caller must prove who it is: API
// keys, or client certificates required.
func (s *security) authenticated() bool { return s.guard.Enabled() || s.requireCerts }

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
