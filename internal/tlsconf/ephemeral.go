package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// EphemeralCA is a certificate authority that lives in memory: for a
// local fleet (globald --demo) and tests that want mutual TLS without an
// operator's files. Its key is never written anywhere; the certificates
// it issues are, with their keys, where the caller says (a temporary
// directory).
type EphemeralCA struct {
	// Cert is the CA's self-signed certificate; PEM its encoding.
	Cert *x509.Certificate
	PEM  []byte
	key  *ecdsa.PrivateKey
}

// CertOptions shape an issued certificate.
type CertOptions struct {
	// DNSNames and IPs are its names besides the defaults (the name it is
	// issued for, localhost, 127.0.0.1 and ::1, unless NoDefaultNames).
	DNSNames       []string
	IPs            []net.IP
	NoDefaultNames bool
	// NotAfter overrides the expiry (a day from now); a time in the past
	// makes an expired certificate.
	NotAfter time.Time
	// URIs are URI subject alternative names: where a peer's roles are
	// named (urn:cellrouter:role:global, urn:cellrouter:pod:vllm-*; see
	// package internal/auth).
	URIs []string
}

// NewEphemeralCA returns a fresh CA named name, valid from an hour ago for
// a day.
func NewEphemeralCA(name string) (*EphemeralCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &EphemeralCA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// Issue returns a certificate and its private key (PEM) for name, good for
// serving and for client authentication (a node of the tier is both).
func (ca *EphemeralCA) Issue(name string, o CertOptions) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     o.DNSNames,
		IPAddresses:  o.IPs,
	}
	for _, u := range o.URIs {
		pu, err := url.Parse(u)
		if err != nil {
			return nil, nil, fmt.Errorf("tlsconf: certificate URI %q: %w", u, err)
		}
		tmpl.URIs = append(tmpl.URIs, pu)
	}
	if !o.NoDefaultNames {
		tmpl.DNSNames = append(tmpl.DNSNames, name, "localhost")
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
		return nil, nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}

// WriteFiles issues a certificate for name and writes it, its key and the
// CA's certificate into dir (name.pem, name-key.pem, name-ca.pem, mode
// 0600), returning the Config that names them.
func (ca *EphemeralCA) WriteFiles(dir, name string, o CertOptions) (Config, error) {
	certPEM, keyPEM, err := ca.Issue(name, o)
	if err != nil {
		return Config{}, err
	}
	c := Config{
		CertFile: filepath.Join(dir, name+".pem"),
		KeyFile:  filepath.Join(dir, name+"-key.pem"),
		CAFile:   filepath.Join(dir, name+"-ca.pem"),
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{c.CertFile, certPEM}, {c.KeyFile, keyPEM}, {c.CAFile, ca.PEM}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return Config{}, fmt.Errorf("tlsconf: %w", err)
		}
	}
	return c, nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}
