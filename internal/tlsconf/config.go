package tlsconf

import (
	"crypto/tls"
	"errors"
	"fmt"
)

// Client-certificate policies of a server (Config.ClientAuth).
const (
	// RequireClientCert refuses every connection without a client
	// certificate of the CA: only peers of the tier get in.
	RequireClientCert = "require"
	// VerifyClientCertIfGiven lets in connections without a client
	// certificate (clients with API keys) and refuses certificates the CA
	// did not sign.
	VerifyClientCertIfGiven = "verify_if_given"
)

// ErrConfig wraps every configuration error.
var ErrConfig = errors.New("tlsconf: invalid config")

// Config names a node's TLS files. The zero Config is TLS off.
type Config struct {
	// CertFile is the node's certificate chain (PEM), leaf first.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the certificate's private key (PEM).
	KeyFile string `yaml:"key_file"`
	// CAFile is the CA bundle (PEM) that peers' certificates must chain
	// to: clients' certificates on a server, servers' on a client.
	CAFile string `yaml:"ca_file"`
	// ServerName, on a client, is the name a server's certificate must
	// carry; "" means the host the client dials (its address in gossip).
	ServerName string `yaml:"server_name"`
	// ClientAuth, on a server: RequireClientCert (the default) or
	// VerifyClientCertIfGiven.
	ClientAuth string `yaml:"client_auth"`
}

// Enabled reports whether TLS is configured.
func (c Config) Enabled() bool { return c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" }

// Validate checks that a configured Config names every file it needs;
// prefix names the configuration section in errors ("tls", "tls.pods").
// clientOnly allows a Config without a certificate (a client that presents
// none, such as the cell dialling pods that do not ask for one).
func (c Config) Validate(prefix string, clientOnly bool) error {
	if !c.Enabled() {
		return nil
	}
	bad := func(field, v, why string) error {
		return fmt.Errorf("%w: %s.%s = %q: %s", ErrConfig, prefix, field, v, why)
	}
	switch {
	case c.CAFile == "":
		return bad("ca_file", "", "required with TLS: peers are verified against it")
	case (c.CertFile == "") != (c.KeyFile == ""):
		return bad("key_file", c.KeyFile, "cert_file and key_file go together")
	case c.CertFile == "" && !clientOnly:
		return bad("cert_file", "", "required: the node needs a certificate to serve and to be verified")
	}
	if _, err := c.clientAuth(); err != nil {
		return bad("client_auth", c.ClientAuth, "want require or verify_if_given")
	}
	return nil
}

func (c Config) clientAuth() (tls.ClientAuthType, error) {
	switch c.ClientAuth {
	case "", RequireClientCert:
		return tls.RequireAndVerifyClientCert, nil
	case VerifyClientCertIfGiven:
		return tls.VerifyClientCertIfGiven, nil
	}
	return 0, ErrConfig
}

// paths returns the files Source reads, in Load's order.
func (c Config) paths() []string {
	out := []string{c.CAFile}
	if c.CertFile != "" {
		out = append(out, c.CertFile, c.KeyFile)
	}
	return out
}
