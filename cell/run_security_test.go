package cell

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	eventsv1 "github.com/cellrouter/cellrouter/api/events/v1"
	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// keyFile writes a key file with tenants acme (isolated, 1 request in
// flight), lab (not isolated) and ops, and keys "acme-key" (inference),
// "lab-key" (inference), "ops-key" (admin), "pub-key" (events, any pod
// the cell knows) and "pub-a-key" (events, for pod-a only).
func keyFile(t *testing.T, dir string) string {
	t.Helper()
	f := "tenants:\n  - {name: acme, max_concurrent: 1}\n  - {name: lab, isolated: false}\n  - {name: ops}\nkeys:\n"
	for key, rest := range map[string]string{"acme-key": "acme, scopes: [inference]", "lab-key": "lab, scopes: [inference]",
		"ops-key": "ops, scopes: [admin]", "pub-key": "ops, scopes: [events]", "pub-a-key": "ops, scopes: [events], pods: [pod-a]"} {
		f += "  - {sha256: " + auth.HashKey(key).String() + ", tenant: " + rest + "}\n"
	}
	p := filepath.Join(dir, "keys.yaml")
	tlstest.Write(t, p, []byte(f))
	return p
}

// secureCell is a cell with API keys and mutual TLS (client certificates
// verified when given), with one fake pod serving model m.
type secureCell struct {
	c      *Cell
	pod    *fakePod
	peer   *tls.Config // a client with a certificate of the tier's CA, naming no role (global by default)
	admin  *tls.Config // a certificate of the admin role
	pub    *tls.Config // a certificate of the publisher role, for pods pod-a*
	anon   *tls.Config // a client that trusts the cell but has no certificate
	other  *tls.Config // a client with a certificate of another CA
	base   string      // https://addr
	logs   *servertest.LogBuffer
	keyDir string
}

func startSecureCell(t *testing.T, clientAuth string) *secureCell {
	t.Helper()
	dir := t.TempDir()
	ca, intruder := tlstest.NewCA(t, "tier"), tlstest.NewCA(t, "intruder")
	s := &secureCell{pod: newFakePod(t, "pod-a"), logs: &servertest.LogBuffer{}, keyDir: dir}
	cfg := testConfig()
	cfg.Pods = []PodConfig{{ID: "pod-a", Address: s.pod.addr(), KVBlocks: 10000}}
	cfg.Auth.KeyFile, cfg.Auth.ReloadInterval = keyFile(t, dir), 20*time.Millisecond
	cfg.TLS.Config = ca.Files(t, dir, "cell", tlstest.Options{})
	cfg.TLS.ClientAuth = clientAuth
	c, err := New(cfg, slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	s.c, s.base = c, "https://"+c.HTTPAddr()
	src := func(cfg tlsconf.Config) *tls.Config {
		src, err := tlsconf.NewSource(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return src.ClientConfig()
	}
	s.peer = src(ca.Files(t, dir, "globald", tlstest.Options{}))
	s.admin = src(ca.Files(t, dir, "operator", tlstest.Options{URIs: []string{auth.RoleURI(auth.RoleAdmin)}}))
	s.pub = src(ca.Files(t, dir, "sidecar", tlstest.Options{URIs: []string{auth.RoleURI(auth.RolePublisher), auth.PodURI("pod-a*")}}))
	s.anon = src(tlsconf.Config{CAFile: cfg.TLS.CAFile})
	oc := intruder.Files(t, dir, "intruder", tlstest.Options{})
	oc.CAFile = cfg.TLS.CAFile
	s.other = src(oc)
	return s
}

// call sends a request with the client TLS configuration and headers.
func (s *secureCell) call(t *testing.T, client *tls.Config, method, path, body string, hdr map[string]string) (int, http.Header, string, error) {
	t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: client}, Timeout: 20 * time.Second}
	defer cl.CloseIdleConnections()
	resp, err := cl.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b), nil
}

const testCompletion = `{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"max_tokens":2}`

// TestCellRejections sends every kind of caller to a cell with API keys
// and mutual TLS (client certificates verified when given, so clients
// with keys get in too), and checks each answer: the HTTP rejection paths
// of the data plane, the control plane and metrics, the TLS refusals, and
// what reaches the pod when a request gets through.
func TestCellRejections(t *testing.T) {
	s := startSecureCell(t, tlsconf.VerifyClientCertIfGiven)
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	tests := []struct {
		name         string
		client       *tls.Config
		method, path string
		body         string
		hdr          map[string]string
		wantStatus   int
		wantCode     string
	}{
		{"no key", s.anon, "POST", "/v1/completions", testCompletion, nil, 401, "missing_api_key"},
		{"unknown key", s.anon, "POST", "/v1/completions", testCompletion, bearer("nope"), 401, "invalid_api_key"},
		{"admin key on the data plane", s.anon, "POST", "/v1/completions", testCompletion, bearer("ops-key"), 403, "insufficient_scope"},
		{"events key on the data plane", s.anon, "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, bearer("pub-key"), 403, "insufficient_scope"},
		{"no key for the models", s.anon, "GET", "/v1/models", "", nil, 401, "missing_api_key"},
		{"no key for one model", s.anon, "GET", "/v1/models/m", "", nil, 401, "missing_api_key"},
		{"no key for tokenize", s.anon, "POST", "/tokenize", `{"model":"m","prompt":"x"}`, nil, 401, "missing_api_key"},
		{"inference key on the control plane", s.anon, "GET", "/v1/cell/state", "", bearer("acme-key"), 403, "insufficient_scope"},
		{"inference key on drain", s.anon, "POST", "/v1/cell/pods/pod-a:drain", "{}", bearer("lab-key"), 403, "insufficient_scope"},
		{"inference key on the dry run", s.anon, "POST", "/v1/cell/route", `{"model":"m","tokenIds":[1]}`, bearer("lab-key"), 403, "insufficient_scope"},
		{"no key for metrics", s.anon, "GET", "/metrics", "", nil, 401, "missing_api_key"},
		{"a tenant header is no key", s.anon, "POST", "/v1/completions", testCompletion, map[string]string{"X-Cellrouter-Tenant": "acme"}, 401, "missing_api_key"},
		{"opted-out tenant naming an isolated partition", s.anon, "POST", "/v1/completions",
			`{"model":"m","prompt":[1,2,3],"cache_salt":"tenant:acme"}`, bearer("lab-key"), 400, "invalid_cache_salt"},
		{"model no pod serves", s.anon, "POST", "/v1/completions", `{"model":"no-such-model","prompt":[1,2,3]}`, bearer("lab-key"), 404, "model_not_found"},
		{"admin key on the control plane", s.anon, "GET", "/v1/cell/state", "", bearer("ops-key"), 200, ""},
		{"admin key on metrics", s.anon, "GET", "/metrics", "", bearer("ops-key"), 200, ""},
		{"health needs nothing", s.anon, "GET", "/healthz", "", nil, 200, ""},
		{"the OpenAPI document needs nothing", s.anon, "GET", "/openapi/cell.swagger.json", "", nil, 200, ""},
		{"globald's certificate is no admin", s.peer, "GET", "/v1/cell/state", "", nil, 403, "insufficient_scope"},
		{"globald's certificate is no admin of metrics", s.peer, "GET", "/metrics", "", nil, 403, "insufficient_scope"},
		{"an admin certificate needs no key", s.admin, "GET", "/v1/cell/state", "", nil, 200, ""},
		{"a publisher certificate is no client", s.pub, "POST", "/v1/completions", testCompletion, nil, 403, "insufficient_scope"},
	}
	// The pods' model lists are read at start; the model check needs them.
	waitFor(t, "the pod's models", func() bool { known, _ := s.c.servedModels(); return known })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, h, body, err := s.call(t, tt.client, tt.method, tt.path, tt.body, tt.hdr)
			if err != nil {
				t.Fatal(err)
			}
			if code != tt.wantStatus {
				t.Fatalf("got %d %s, want %d", code, body, tt.wantStatus)
			}
			if tt.wantCode == "" {
				return
			}
			d := servertest.ErrorBody(t, body)
			if got := strings.Trim(string(d.Code), `"`); got != tt.wantCode {
				t.Errorf("code: got %s, want %s", body, tt.wantCode)
			}
			if code == 401 && h.Get("WWW-Authenticate") == "" {
				t.Error("a 401 without WWW-Authenticate")
			}
		})
	}
	if s.pod.count() != 0 {
		t.Fatalf("%d refused requests reached the pod", s.pod.count())
	}

	// A request that gets through: the pod sees the key's tenant (not the
	// one the client named), its salt, and no key.
	code, _, body, err := s.call(t, s.anon, "POST", "/v1/completions", testCompletion,
		map[string]string{"Authorization": "Bearer acme-key", "X-Cellrouter-Tenant": "lab"})
	if err != nil || code != 200 {
		t.Fatalf("acme: %d %s %v", code, body, err)
	}
	got := s.pod.last()
	if got.header.Get("X-Cellrouter-Tenant") != "acme" || got.header.Get("Authorization") != "" || got.body["cache_salt"] != "tenant:acme" {
		t.Errorf("the pod saw tenant %q, authorization %q, cache_salt %v; want acme, none, tenant:acme",
			got.header.Get("X-Cellrouter-Tenant"), got.header.Get("Authorization"), got.body["cache_salt"])
	}
	// A peer's tenant and salt are believed as they come.
	code, _, body, err = s.call(t, s.peer, "POST", "/v1/completions", `{"model":"m","prompt":[1,2,3],"cache_salt":"tenant:globex"}`,
		map[string]string{"X-Cellrouter-Tenant": "globex"})
	if err != nil || code != 200 {
		t.Fatalf("peer: %d %s %v", code, body, err)
	}
	got = s.pod.last()
	if got.header.Get("X-Cellrouter-Tenant") != "globex" || got.body["cache_salt"] != "tenant:globex" {
		t.Errorf("the pod saw tenant %q, cache_salt %v; want the peer's globex, tenant:globex", got.header.Get("X-Cellrouter-Tenant"), got.body["cache_salt"])
	}

	// TLS refusals: a certificate of another CA, and plaintext.
	if _, _, _, err := s.call(t, s.other, "GET", "/healthz", "", nil); err == nil {
		t.Error("a certificate of another CA was let in")
	}
	resp, err := http.Get("http://" + s.c.HTTPAddr() + "/healthz")
	if err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Errorf("plaintext HTTP was served: %s", b)
		}
	}

	// The keys never reach the logs.
	for _, k := range []string{"acme-key", "lab-key", "ops-key", "pub-key", "nope"} {
		if strings.Contains(s.logs.String(), k) {
			t.Errorf("the logs hold the key %q", k)
		}
	}
}

// TestCellRequiresPeerCertificates checks a cell that lets in only peers
// (client_auth require, the default): a client without a certificate,
// even with a valid key, is refused at the handshake, over HTTP and gRPC.
func TestCellRequiresPeerCertificates(t *testing.T) {
	s := startSecureCell(t, tlsconf.RequireClientCert)
	if _, _, _, err := s.call(t, s.anon, "POST", "/v1/completions", testCompletion, map[string]string{"Authorization": "Bearer lab-key"}); err == nil {
		t.Error("HTTP: a client without a certificate was let in")
	}
	if code, _, body, err := s.call(t, s.peer, "POST", "/v1/completions", testCompletion, nil); err != nil || code != 200 {
		t.Errorf("HTTP: the peer got %d %s %v", code, body, err)
	}
	for name, creds := range map[string]credentials.TransportCredentials{
		"plaintext": insecure.NewCredentials(), "no certificate": credentials.NewTLS(s.anon), "another CA": credentials.NewTLS(s.other)} {
		conn, err := grpc.NewClient(s.c.GRPCAddr(), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer ops-key"), 20*time.Second)
		_, err = cellv1.NewCellServiceClient(conn).ListPods(ctx, &cellv1.ListPodsRequest{})
		cancel()
		conn.Close()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("gRPC %s: got %v, want the connection refused (Unavailable)", name, err)
		}
	}
}

// TestCellGRPCRejections checks the gRPC rejection paths of the control
// plane and event publishing.
func TestCellGRPCRejections(t *testing.T) {
	s := startSecureCell(t, tlsconf.VerifyClientCertIfGiven)
	dial := func(c *tls.Config) *grpc.ClientConn {
		conn, err := grpc.NewClient(s.c.GRPCAddr(), grpc.WithTransportCredentials(credentials.NewTLS(c)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	anon, peer := dial(s.anon), dial(s.peer)
	ctxWith := func(key string) (context.Context, context.CancelFunc) {
		ctx := context.Background()
		if key != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
		}
		return context.WithTimeout(ctx, 20*time.Second)
	}
	route := &cellv1.RouteRequest{Model: "m", TokenIds: []uint32{1, 2, 3}}
	for _, tt := range []struct {
		name string
		conn *grpc.ClientConn
		key  string
		want codes.Code
	}{
		{"no key", anon, "", codes.Unauthenticated},
		{"unknown key", anon, "nope", codes.Unauthenticated},
		{"inference key", anon, "acme-key", codes.PermissionDenied},
		{"events key", anon, "pub-key", codes.PermissionDenied},
		{"admin key", anon, "ops-key", codes.OK},
		{"peer", peer, "", codes.OK},
	} {
		ctx, cancel := ctxWith(tt.key)
		_, err := cellv1.NewCellServiceClient(tt.conn).Route(ctx, route)
		cancel()
		if status.Code(err) != tt.want {
			t.Errorf("Route, %s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	publish := func(conn *grpc.ClientConn, key string) error {
		ctx, cancel := ctxWith(key)
		defer cancel()
		st, err := eventsv1.NewEventPublisherClient(conn).Publish(ctx)
		if err != nil {
			return err
		}
		// A refused stream ends Send with io.EOF; Recv has its status.
		if err := st.Send(&eventsv1.PublishRequest{Pod: "pod-a", Model: "m", EventId: 1}); err != nil && err != io.EOF {
			return err
		}
		_, err = st.Recv()
		return err
	}
	for _, tt := range []struct {
		name string
		conn *grpc.ClientConn
		key  string
		want codes.Code
	}{
		{"no key", anon, "", codes.Unauthenticated},
		{"admin key", anon, "ops-key", codes.PermissionDenied},
		{"inference key", anon, "lab-key", codes.PermissionDenied},
		{"events key", anon, "pub-key", codes.OK},
	} {
		if err := publish(tt.conn, tt.key); status.Code(err) != tt.want {
			t.Errorf("Publish, %s: got %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestCellKeyFileReload replaces the key file under a running cell: the
// new key works and the old one stops, without a restart; a broken file
// keeps the keys in force.
func TestCellKeyFileReload(t *testing.T) {
	s := startSecureCell(t, tlsconf.VerifyClientCertIfGiven)
	status := func(key string) int {
		code, _, _, err := s.call(t, s.anon, "GET", "/v1/cell/state", "", map[string]string{"Authorization": "Bearer " + key})
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	if status("ops-key") != 200 || status("new-ops-key") != 401 {
		t.Fatal("before the reload")
	}
	path := filepath.Join(s.keyDir, "keys.yaml")
	tlstest.Write(t, path, []byte("tenants: [{name: ops}]\nkeys:\n  - {sha256: "+auth.HashKey("new-ops-key").String()+", tenant: ops, scopes: [admin]}\n"))
	waitFor(t, "the new key", func() bool { return status("new-ops-key") == 200 })
	if status("ops-key") != 401 {
		t.Error("the old key still works")
	}
	tlstest.Write(t, path, []byte("keys: [{sha256: broken}]\n"))
	waitFor(t, "the refusal logged", func() bool { return strings.Contains(s.logs.String(), "reload refused") })
	if status("new-ops-key") != 200 {
		t.Error("a broken key file dropped the keys in force")
	}
}

// TestWarnsWhenExposed checks the warning of a cell that serves without
// authentication on a non-loopback address, and its absence with keys or
// on loopback.
func TestWarnsWhenExposed(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name     string
		addr     string
		keys     bool
		wantWarn bool
	}{
		{"loopback", "127.0.0.1:0", false, false},
		{"every interface", "0.0.0.0:0", false, true},
		{"every interface with keys", "0.0.0.0:0", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.HTTPAddr, cfg.GRPCAddr = tc.addr, "127.0.0.1:0"
			if tc.keys {
				cfg.Auth.KeyFile = keyFile(t, dir)
			}
			logs := &servertest.LogBuffer{}
			c, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			waitFor(t, "serving", func() bool { return strings.Contains(logs.String(), "celld serving") })
			cancel()
			<-done
			if got := strings.Contains(logs.String(), "without authentication on a non-loopback address"); got != tc.wantWarn {
				t.Errorf("warned %v, want %v; logs:\n%s", got, tc.wantWarn, logs)
			}
		})
	}
}

// TestCellLimitsAnswerInOpenAIShape checks that the cell's server limits
// are on and answered as OpenAI clients expect: a body over
// routing.max_body_bytes, headers over limits.max_header_bytes.
func TestCellLimitsAnswerInOpenAIShape(t *testing.T) {
	cfg := testConfig()
	cfg.Routing.MaxBodyBytes, cfg.Limits.MaxHeaderBytes = 2048, 4096
	c := startCell(t, cfg)
	big := `{"model":"m","prompt":"` + strings.Repeat("a", 4000) + `"}`
	resp, err := http.Post("http://"+c.HTTPAddr()+"/v1/completions", "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 413 || !json.Valid(b) {
		t.Errorf("large body: got %d %s, want 413 in OpenAI's shape", resp.StatusCode, b)
	}
	req, _ := http.NewRequest("GET", "http://"+c.HTTPAddr()+"/v1/models", nil)
	req.Header.Set("X-Pad", strings.Repeat("p", 5000))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	var eb openai.ErrorBody
	if resp.StatusCode != 431 || json.Unmarshal(b, &eb) != nil || string(eb.Error.Code) != `"headers_too_large"` {
		t.Errorf("large headers: got %d %s, want 431 headers_too_large", resp.StatusCode, b)
	}
}

// TestCellTLSReload replaces the cell's certificate while it runs (the CA
// bundle first gains the new CA): new handshakes get the new certificate,
// without a restart.
func TestCellTLSReload(t *testing.T) {
	dir := t.TempDir()
	ca1, ca2 := tlstest.NewCA(t, "tier-1"), tlstest.NewCA(t, "tier-2")
	cfg := testConfig()
	cfg.Auth.ReloadInterval = 20 * time.Millisecond
	cfg.TLS.Config = ca1.Files(t, dir, "cell", tlstest.Options{})
	c := startCell(t, cfg)
	client := ca1.Files(t, dir, "globald", tlstest.Options{})
	bundle := filepath.Join(dir, "both.pem")
	tlstest.Write(t, bundle, append(append([]byte{}, ca1.PEM...), ca2.PEM...))
	client.CAFile = bundle
	src, err := tlsconf.NewSource(client)
	if err != nil {
		t.Fatal(err)
	}
	issuer := func() string {
		conn, err := tls.Dial("tcp", c.HTTPAddr(), src.ClientConfig())
		if err != nil {
			return "refused: " + err.Error()
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Issuer.CommonName
	}
	if got := issuer(); got != "tier-1" {
		t.Fatalf("before: issuer %s", got)
	}
	tlstest.Write(t, cfg.TLS.CAFile, append(append([]byte{}, ca1.PEM...), ca2.PEM...))
	certPEM, keyPEM := ca2.Issue(t, "cell", tlstest.Options{})
	tlstest.Write(t, cfg.TLS.KeyFile, keyPEM)
	tlstest.Write(t, cfg.TLS.CertFile, certPEM)
	waitFor(t, "the new certificate", func() bool { return issuer() == "tier-2" })
}

// TestCellTLSToPods runs a cell whose pod serves HTTPS and asks for a
// client certificate (tls.pods): requests, health checks and the model
// list reach it; without tls.pods they do not.
func TestCellTLSToPods(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "pods")
	podSrc, err := tlsconf.NewSource(ca.Files(t, dir, "pod", tlstest.Options{}))
	if err != nil {
		t.Fatal(err)
	}
	pod := newFakePod(t, "pod-s")
	pod.srv.Close()
	tpod := httptest.NewUnstartedServer(http.HandlerFunc(pod.serve))
	tpod.TLS = podSrc.ServerConfig("http/1.1")
	tpod.Config.ErrorLog = log.New(io.Discard, "", 0) // the plaintext attempts' handshake errors
	tpod.StartTLS()
	t.Cleanup(tpod.Close)
	addr := strings.TrimPrefix(tpod.URL, "https://")
	for _, withTLS := range []bool{true, false} {
		cfg := testConfig()
		cfg.HealthInterval, cfg.HealthTimeout = 50*time.Millisecond, 5*time.Second
		cfg.Pods = []PodConfig{{ID: "pod-s", Address: addr, KVBlocks: 100}}
		if withTLS {
			cfg.TLS.Pods = ca.Files(t, dir, "cell", tlstest.Options{})
		}
		c := startCell(t, cfg)
		resp, body := completion(t, "http://"+c.HTTPAddr(), tokens(32), false, nil)
		if withTLS != (resp.StatusCode == 200) {
			t.Errorf("TLS to pods %v: got %d %s", withTLS, resp.StatusCode, body)
		}
		if withTLS {
			waitFor(t, "the pod's models over TLS", func() bool { known, ms := c.servedModels(); return known && len(ms) == 2 })
		}
	}
}

// TestWarnsOfAnOpenPool checks the warning of a cell that gossips
// unencrypted on a non-loopback address, and its absence with a key.
func TestWarnsOfAnOpenPool(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      string
		wantWarn bool
	}{{"unencrypted", "", true}, {"encrypted", "MDEyMzQ1Njc4OWFiY2RlZg==", false}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.Gossip.Bind, cfg.Gossip.SecretKey = "0.0.0.0:0", tc.key
			logs := &servertest.LogBuffer{}
			c, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			waitFor(t, "gossip", func() bool { return c.GossipAddr() != "" })
			cancel()
			<-done
			if got := strings.Contains(logs.String(), "listener=gossip"); got != tc.wantWarn {
				t.Errorf("warned %v, want %v; logs:\n%s", got, tc.wantWarn, logs)
			}
		})
	}
}
