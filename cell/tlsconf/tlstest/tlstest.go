// Package tlstest makes throwaway certificate authorities and certificates
// for tests of mutual TLS: nothing it makes outlives the test, and no
// private key is ever committed. It is for tests only, in the manner of
// net/http/httptest.
package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/cell/tlsconf"
)

// CA is a certificate authority of one test.
type CA struct {
	// Cert is the CA's self-signed certificate; PEM its encoding.
	Cert *x509.Certificate
	PEM  []byte
	key  *ecdsa.PrivateKey
}

// NewCA returns a fresh CA named name, valid from an hour ago for a day.
func NewCA(t testing.TB, name string) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
}

// Options shape an issued certificate.
type Options struct {
	// DNSNames and IPs are its names besides the defaults (localhost,
	// 127.0.0.1 and ::1, unless NoDefaultNames).
	DNSNames       []string
	IPs            []net.IP
	NoDefaultNames bool
	// NotAfter overrides the expiry (a time in the past makes an expired
	// certificate).
	NotAfter time.Time
}

// Issue returns a certificate and its private key (PEM) for name, signed
// by ca, good for serving and for client authentication.
func (ca *CA) Issue(t testing.TB, name string, o Options) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     append([]string{name}, o.DNSNames...),
		IPAddresses:  o.IPs,
	}
	if !o.NoDefaultNames {
		tmpl.DNSNames = append(tmpl.DNSNames, "localhost")
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IPv4(127, 0, 0, 1), net.IPv6loopback)
	}
	if !o.NotAfter.IsZero() {
		tmpl.NotAfter = o.NotAfter
		if tmpl.NotBefore.After(o.NotAfter) {
			tmpl.NotBefore = o.NotAfter.Add(-time.Hour)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// Files writes the CA bundle and a certificate for name (Issue with o)
// into dir and returns the tlsconf.Config naming them: name.pem,
// name-key.pem and name-ca.pem.
func (ca *CA) Files(t testing.TB, dir, name string, o Options) tlsconf.Config {
	t.Helper()
	certPEM, keyPEM := ca.Issue(t, name, o)
	c := tlsconf.Config{
		CertFile: filepath.Join(dir, name+".pem"),
		KeyFile:  filepath.Join(dir, name+"-key.pem"),
		CAFile:   filepath.Join(dir, name+"-ca.pem"),
	}
	Write(t, c.CertFile, certPEM)
	Write(t, c.KeyFile, keyPEM)
	Write(t, c.CAFile, ca.PEM)
	return c
}

// Write writes data to path (0600), failing t on error.
func Write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
