package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/cellrouter/cellrouter/internal/reload"
)

// Source holds a node's current TLS material and hands out configurations
// that always use it. It is safe for concurrent use.
type Source struct {
	cfg Config
	cur atomic.Pointer[material]
	// now is the clock certificates are checked against (tests).
	now func() time.Time
}

// material is one load of the files.
type material struct {
	cert *tls.Certificate // nil for a client without one
	pool *x509.CertPool
}

// NewSource reads the configured files; it fails when they are missing or
// do not parse.
func NewSource(cfg Config) (*Source, error) {
	s := &Source{cfg: cfg, now: time.Now}
	var data [][]byte
	for _, p := range cfg.paths() {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("tlsconf: %w", err)
		}
		data = append(data, b)
	}
	if err := s.Load(data); err != nil {
		return nil, err
	}
	return s, nil
}

// Paths returns the files, in the order Load takes their contents.
func (s *Source) Paths() []string { return s.cfg.paths() }

// Watch returns a watcher that loads the files into s when they change
// (run it with its Run method); the current files were loaded by
// NewSource, and are loaded again here to set the watcher's baseline.
func (s *Source) Watch(interval time.Duration, onError func(error)) (*reload.Watcher, error) {
	return reload.New(s.Paths(), interval, s.Load, onError)
}

// Load parses new contents of the files (CA bundle, then certificate and
// key when configured) and makes them current. On error the current
// material stays.
func (s *Source) Load(data [][]byte) error {
	if len(data) != len(s.cfg.paths()) {
		return fmt.Errorf("tlsconf: %d files given, want %d", len(data), len(s.cfg.paths()))
	}
	m := &material{pool: x509.NewCertPool()}
	if len(data[0]) == 0 || !m.pool.AppendCertsFromPEM(data[0]) {
		return fmt.Errorf("tlsconf: %s: no PEM certificate", s.cfg.CAFile)
	}
	if s.cfg.CertFile != "" {
		cert, err := tls.X509KeyPair(data[1], data[2])
		if err != nil {
			return fmt.Errorf("tlsconf: %s, %s: %w", s.cfg.CertFile, s.cfg.KeyFile, err)
		}
		m.cert = &cert
	}
	s.cur.Store(m)
	return nil
}

// Leaf returns the current certificate's leaf, nil without one.
func (s *Source) Leaf() *x509.Certificate {
	m := s.cur.Load()
	if m.cert == nil {
		return nil
	}
	return m.cert.Leaf
}

// ServerConfig returns a server configuration offering nextProtos in ALPN
// ("h2" for gRPC, "http/1.1" for the HTTP servers) with the current
// certificate, verifying client certificates against the current CA
// bundle as Config.ClientAuth says.
func (s *Source) ServerConfig(nextProtos ...string) *tls.Config {
	auth, _ := s.cfg.clientAuth()
	type built struct {
		m *material
		c *tls.Config
	}
	var cache atomic.Pointer[built]
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: nextProtos,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := s.cur.Load()
			if b := cache.Load(); b != nil && b.m == m {
				return b.c, nil
			}
			if m.cert == nil {
				return nil, errors.New("tlsconf: no certificate to serve with")
			}
			c := &tls.Config{
				MinVersion:   tls.VersionTLS12,
				NextProtos:   nextProtos,
				Certificates: []tls.Certificate{*m.cert},
				ClientAuth:   auth,
				ClientCAs:    m.pool,
			}
			cache.Store(&built{m: m, c: c})
			return c, nil
		},
	}
}

// ClientConfig returns a client configuration that presents the current
// certificate (when there is one) and verifies the server against the
// current CA bundle and Config.ServerName, or the name the connection was
// made for.
func (s *Source) ClientConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The library's verification uses RootCAs, fixed for the life of
		// the config; VerifyConnection below does the same check against
		// the CA bundle current at each handshake.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if m := s.cur.Load(); m.cert != nil {
				return m.cert, nil
			}
			return &tls.Certificate{}, nil // none: the server decides
		},
		VerifyConnection: s.verifyServer,
	}
}

// verifyServer verifies a server's chain and name as crypto/tls would with
// RootCAs set to the current bundle.
func (s *Source) verifyServer(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tlsconf: the server sent no certificate")
	}
	name := s.cfg.ServerName
	if name == "" {
		name = cs.ServerName
	}
	if h, _, err := net.SplitHostPort(name); err == nil {
		name = h
	}
	opts := x509.VerifyOptions{
		Roots:         s.cur.Load().pool,
		DNSName:       name,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		CurrentTime:   s.now(),
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		return fmt.Errorf("tlsconf: server certificate: %w", err)
	}
	return nil
}

// VerifiedPeer reports whether a connection's client presented a
// certificate that chains to the server's CA bundle: an authenticated peer
// of the tier. A nil state (plaintext) is not one.
func VerifiedPeer(cs *tls.ConnectionState) bool {
	return cs != nil && len(cs.VerifiedChains) > 0
}

// PeerURIs returns the URI subject alternative names of a verified peer's
// certificate (where its roles are: auth.ParsePeerURIs), nil for a
// connection that is not a verified peer's.
func PeerURIs(cs *tls.ConnectionState) []string {
	if !VerifiedPeer(cs) || len(cs.VerifiedChains[0]) == 0 || cs.VerifiedChains[0][0] == nil {
		return nil
	}
	leaf := cs.VerifiedChains[0][0]
	out := make([]string, len(leaf.URIs))
	for i, u := range leaf.URIs {
		out[i] = u.String()
	}
	return out
}
