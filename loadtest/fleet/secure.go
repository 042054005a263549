package fleet

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
)

// DemoTenant is the tenant of the key a secure fleet prints.
const DemoTenant = "demo"

// secrets are what a secure fleet generates in its temporary directory:
// a key file with one tenant and key, a CA with a certificate for the
// global tier and one per cell, and a gossip keyring. The CA's key lives
// only in memory.
type secrets struct {
	keyFile, keyring string
	apiKey           string
	ca               *tlsconf.EphemeralCA
	global           tlsconf.Config
	// admin is an operator's client certificate (role admin): what curl
	// and grpcurl present to reach a cell's control plane, metrics and
	// reflection.
	admin tlsconf.Config
	dir   string
}

// newSecrets writes the fleet's secrets into dir.
func newSecrets(dir string) (*secrets, error) {
	s := &secrets{dir: dir}
	key, hash, err := auth.NewKey()
	if err != nil {
		return nil, err
	}
	s.apiKey = key
	s.keyFile = filepath.Join(dir, "keys.yaml")
	kf := fmt.Sprintf("# The demo fleet's API keys (globald --demo). The key itself is printed, never stored.\n"+
		"tenants:\n  - {name: %s, requests_per_second: 200, burst: 400, max_concurrent: 64}\n"+
		"keys:\n  - {sha256: %s, tenant: %s, scopes: [inference, admin], name: demo}\n", DemoTenant, hash, DemoTenant)
	if err := os.WriteFile(s.keyFile, []byte(kf), 0o600); err != nil {
		return nil, err
	}
	var gk [32]byte
	if _, err := rand.Read(gk[:]); err != nil {
		return nil, err
	}
	s.keyring = filepath.Join(dir, "gossip.keyring")
	if err := os.WriteFile(s.keyring, []byte(base64.StdEncoding.EncodeToString(gk[:])+"\n"), 0o600); err != nil {
		return nil, err
	}
	if s.ca, err = tlsconf.NewEphemeralCA("cellrouter demo tier"); err != nil {
		return nil, err
	}
	// Each certificate names its role, so it grants only what that tier
	// needs of the cells: globald the hand-off and the probe, a cell the
	// snapshot of a replica.
	if s.global, err = s.ca.WriteFiles(dir, "globald", tlsconf.CertOptions{URIs: []string{auth.RoleURI(auth.RoleGlobal)}}); err != nil {
		return nil, err
	}
	if s.admin, err = s.ca.WriteFiles(dir, "operator", tlsconf.CertOptions{URIs: []string{auth.RoleURI(auth.RoleAdmin)}}); err != nil {
		return nil, err
	}
	return s, nil
}

// cell writes a certificate for a cell and returns its TLS files.
func (s *secrets) cell(id string) (tlsconf.Config, error) {
	return s.ca.WriteFiles(s.dir, id, tlsconf.CertOptions{URIs: []string{auth.RoleURI(auth.RoleCell)}})
}
