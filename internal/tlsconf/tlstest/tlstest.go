package tlstest

import (
	"os"
	"testing"

	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// CA is a certificate authority of one test.
type CA struct{ *tlsconf.EphemeralCA }

// Options shape an issued certificate.
type Options = tlsconf.CertOptions

// NewCA returns a fresh CA named name.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	ca, err := tlsconf.NewEphemeralCA(name)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{ca}
}

// Issue returns a certificate and its key (PEM) for name.
func (ca *CA) Issue(t testing.TB, name string, o Options) (certPEM, keyPEM []byte) {
	t.Helper()
	c, k, err := ca.EphemeralCA.Issue(name, o)
	if err != nil {
		t.Fatal(err)
	}
	return c, k
}

// Files writes the CA bundle and a certificate for name into dir and
// returns the tlsconf.Config naming them: name.pem, name-key.pem and
// name-ca.pem.
func (ca *CA) Files(t testing.TB, dir, name string, o Options) tlsconf.Config {
	t.Helper()
	c, err := ca.WriteFiles(dir, name, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Write writes data to path (0600), failing t on error.
func Write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
