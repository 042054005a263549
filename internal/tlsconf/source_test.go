package tlsconf_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// serve starts an HTTP server with src's server configuration; its handler
// answers whether the client is a verified peer.
func serve(t *testing.T, src *tlsconf.Source) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, tlsconf.VerifiedPeer(r.TLS))
		}),
		ErrorLog: log.New(io.Discard, "", 0),
	}
	go srv.Serve(tls.NewListener(l, src.ServerConfig("http/1.1")))
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func get(client *tls.Config, url string) (string, error) {
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: client}, Timeout: 20 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprintf("%d %s", resp.StatusCode, b), nil
}

func source(t *testing.T, c tlsconf.Config) *tlsconf.Source {
	t.Helper()
	s, err := tlsconf.NewSource(c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMutualTLS checks every way into a server that requires client
// certificates: only a client with a certificate of the tier's CA gets in,
// and a client accepts only a server of the CA with the right name.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, "tier"), tlstest.NewCA(t, "intruder")
	serverCfg := ca.Files(t, dir, "cell", tlstest.Options{})
	addr := serve(t, source(t, serverCfg))
	url := "https://" + addr + "/"

	peer := source(t, ca.Files(t, dir, "global", tlstest.Options{}))
	stranger := source(t, other.Files(t, dir, "stranger", tlstest.Options{}))
	// A client that trusts the tier's CA but has no certificate.
	anon := source(t, tlsconf.Config{CAFile: serverCfg.CAFile})
	expiredCfg := ca.Files(t, dir, "expired", tlstest.Options{NotAfter: time.Now().Add(-time.Minute)})
	expired := source(t, expiredCfg)

	tests := []struct {
		name    string
		client  *tls.Config
		want    string // "" for a refusal
		wantErr string
	}{
		{"peer of the CA", peer.ClientConfig(), "200 true", ""},
		{"no client certificate", anon.ClientConfig(), "", "certificate required"},
		{"certificate of another CA", strangerClientTrustingTier(t, dir, other, serverCfg.CAFile), "", "unknown certificate authority"},
		{"expired client certificate", expired.ClientConfig(), "", "expired certificate"},
		{"client that does not trust the server's CA", stranger.ClientConfig(), "", "certificate signed by unknown authority"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := get(tt.client, url)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("got %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %q, %v; want a refusal mentioning %q", got, err, tt.wantErr)
			}
		})
	}

	t.Run("plaintext", func(t *testing.T) {
		resp, err := http.Get("http://" + addr + "/")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "true") {
				t.Fatalf("plaintext: got %d %s, want refused", resp.StatusCode, b)
			}
		}
	})
	t.Run("server name mismatch", func(t *testing.T) {
		c := serverCfg
		c.CertFile, c.KeyFile = "", ""
		c.ServerName = "not-the-cell.example"
		_, err := get(source(t, c).ClientConfig(), url)
		if err == nil || !strings.Contains(err.Error(), "not-the-cell.example") {
			t.Fatalf("got %v, want a name mismatch", err)
		}
	})
}

// strangerClientTrustingTier is a client with another CA's certificate that
// trusts the tier's CA, so the refusal is the server's.
func strangerClientTrustingTier(t *testing.T, dir string, other *tlstest.CA, tierCA string) *tls.Config {
	c := other.Files(t, dir, "stranger2", tlstest.Options{})
	c.CAFile = tierCA
	return source(t, c).ClientConfig()
}

func TestVerifyIfGiven(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, "tier"), tlstest.NewCA(t, "intruder")
	sc := ca.Files(t, dir, "cell", tlstest.Options{})
	sc.ClientAuth = tlsconf.VerifyClientCertIfGiven
	url := "https://" + serve(t, source(t, sc)) + "/"
	if got, err := get(source(t, ca.Files(t, dir, "g", tlstest.Options{})).ClientConfig(), url); err != nil || got != "200 true" {
		t.Errorf("peer: got %q, %v; want a verified peer", got, err)
	}
	if got, err := get(source(t, tlsconf.Config{CAFile: sc.CAFile}).ClientConfig(), url); err != nil || got != "200 false" {
		t.Errorf("no certificate: got %q, %v; want let in, not a peer", got, err)
	}
	if _, err := get(strangerClientTrustingTier(t, dir, other, sc.CAFile), url); err == nil {
		t.Error("a certificate of another CA was let in")
	}
}

// TestReload rotates the tier to a new CA: the client learns both CAs, the
// server switches to a certificate of the new one, and new handshakes use
// it, without a restart.
func TestReload(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := tlstest.NewCA(t, "tier-1"), tlstest.NewCA(t, "tier-2")
	sc := ca1.Files(t, dir, "cell", tlstest.Options{})
	srv := source(t, sc)
	url := "https://" + serve(t, srv) + "/"
	cc := ca1.Files(t, dir, "global", tlstest.Options{})
	cli := source(t, cc)
	serverW, err := srv.Watch(time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	clientW, err := cli.Watch(time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(step, want string) {
		t.Helper()
		got, err := get(cli.ClientConfig(), url)
		if want == "" {
			if err == nil {
				t.Fatalf("%s: got %q, want refused", step, got)
			}
			return
		}
		if err != nil || got != want {
			t.Fatalf("%s: got %q, %v; want %q", step, got, err, want)
		}
	}
	check("before", "200 true")
	// Both ends trust both CAs.
	bundle := append(append([]byte{}, ca1.PEM...), ca2.PEM...)
	tlstest.Write(t, sc.CAFile, bundle)
	tlstest.Write(t, cc.CAFile, bundle)
	for _, w := range []interface{ Check() (bool, error) }{serverW, clientW} {
		if changed, err := w.Check(); !changed || err != nil {
			t.Fatalf("reload of the bundle: %v, %v", changed, err)
		}
	}
	check("both CAs", "200 true")
	// The server moves to the new CA.
	c, k := ca2.Issue(t, "cell", tlstest.Options{})
	tlstest.Write(t, sc.CertFile, c)
	tlstest.Write(t, sc.KeyFile, k)
	if changed, err := serverW.Check(); !changed || err != nil {
		t.Fatalf("reload of the server certificate: %v, %v", changed, err)
	}
	if got := srv.Leaf().Issuer.CommonName; got != "tier-2" {
		t.Fatalf("server certificate issuer after reload: got %s, want tier-2", got)
	}
	check("new server certificate", "200 true")
	// The client drops the old CA; its certificate is still of the old
	// CA, which the server still trusts.
	tlstest.Write(t, cc.CAFile, ca2.PEM)
	clientW.Check()
	check("client trusts only the new CA", "200 true")
	// The server drops the old CA: the client's old certificate is refused
	// until it gets a new one.
	tlstest.Write(t, sc.CAFile, ca2.PEM)
	serverW.Check()
	check("server trusts only the new CA", "")
	c, k = ca2.Issue(t, "global", tlstest.Options{})
	tlstest.Write(t, cc.CertFile, c)
	tlstest.Write(t, cc.KeyFile, k)
	clientW.Check()
	check("client with a new certificate", "200 true")

	// A broken file is refused and the last good material stays.
	tlstest.Write(t, sc.KeyFile, []byte("not a key"))
	if changed, err := serverW.Check(); changed || err == nil {
		t.Fatalf("a broken key was loaded: %v, %v", changed, err)
	}
	check("after a broken file", "200 true")
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name       string
		c          tlsconf.Config
		clientOnly bool
		want       string
	}{
		{"off", tlsconf.Config{}, false, ""},
		{"complete", tlsconf.Config{CertFile: "c", KeyFile: "k", CAFile: "ca"}, false, ""},
		{"client without certificate", tlsconf.Config{CAFile: "ca"}, true, ""},
		{"no CA", tlsconf.Config{CertFile: "c", KeyFile: "k"}, false, "tls.ca_file"},
		{"cert without key", tlsconf.Config{CertFile: "c", CAFile: "ca"}, false, "tls.key_file"},
		{"server without certificate", tlsconf.Config{CAFile: "ca"}, false, "tls.cert_file"},
		{"bad client auth", tlsconf.Config{CertFile: "c", KeyFile: "k", CAFile: "ca", ClientAuth: "optional"}, false, "tls.client_auth = \"optional\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate("tls", tt.clientOnly)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("got %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tlsconf.ErrConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

func TestNewSourceErrors(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "tier")
	good := ca.Files(t, dir, "n", tlstest.Options{})
	bad := filepath.Join(dir, "bad.pem")
	os.WriteFile(bad, []byte("junk"), 0o600)
	for _, c := range []tlsconf.Config{
		{CertFile: good.CertFile, KeyFile: good.KeyFile, CAFile: filepath.Join(dir, "missing.pem")},
		{CertFile: good.CertFile, KeyFile: good.KeyFile, CAFile: bad},
		{CertFile: good.CertFile, KeyFile: bad, CAFile: good.CAFile},
	} {
		if _, err := tlsconf.NewSource(c); err == nil {
			t.Errorf("%+v: got nil, want an error", c)
		}
	}
}
