package global

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	cellv1 "github.com/cellrouter/cellrouter/api/cell/v1"
	globalv1 "github.com/cellrouter/cellrouter/api/global/v1"
	"github.com/cellrouter/cellrouter/cell"
	"github.com/cellrouter/cellrouter/gossip"
	"github.com/cellrouter/cellrouter/internal/auth"
	"github.com/cellrouter/cellrouter/internal/servers/servertest"
	"github.com/cellrouter/cellrouter/internal/tlsconf"
	"github.com/cellrouter/cellrouter/internal/tlsconf/tlstest"
)

// recordingPod is an instant pod that keeps the headers and body of every
// inference request it serves.
type recordingPod struct {
	addr string
	mu   sync.Mutex
	reqs []podRequest
}

type podRequest struct {
	header http.Header
	body   map[string]any
}

func startRecordingPod(t *testing.T, id string) *recordingPod {
	t.Helper()
	p := &recordingPod{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health", "/metrics": // health checks; the cell's engine-metrics scrapes
			if r.URL.Path == "/metrics" {
				http.NotFound(w, r)
			}
			return
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		p.mu.Lock()
		p.reqs = append(p.reqs, podRequest{header: r.Header.Clone(), body: body})
		p.mu.Unlock()
		// What an engine adds: its address (enginesim's header) and a
		// request id.
		w.Header().Set("X-Enginesim-Pod", r.Host)
		w.Header().Set("X-Request-Id", "pod-req")
		fmt.Fprintf(w, `{"choices":[{"text":"from %s"}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`, id)
	}))
	t.Cleanup(srv.Close)
	p.addr = strings.TrimPrefix(srv.URL, "http://")
	return p
}

func (p *recordingPod) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

func (p *recordingPod) last() podRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reqs[len(p.reqs)-1]
}

// globalKeyFile writes the key file of the tier's tests: acme (isolated,
// a request per 100 s, burst 1), lab (not isolated), ops; keys
// acme-key and lab-key (inference), ops-key (admin).
func globalKeyFile(t *testing.T, dir string) string {
	t.Helper()
	f := "tenants:\n  - {name: acme, requests_per_second: 0.01, burst: 1}\n  - {name: lab, isolated: false}\n  - {name: ops}\nkeys:\n" +
		"  - {sha256: " + auth.HashKey("acme-key").String() + ", tenant: acme, scopes: [inference]}\n" +
		"  - {sha256: " + auth.HashKey("lab-key").String() + ", tenant: lab, scopes: [inference]}\n" +
		"  - {sha256: " + auth.HashKey("ops-key").String() + ", tenant: ops, scopes: [admin]}\n"
	p := filepath.Join(dir, "keys.yaml")
	tlstest.Write(t, p, []byte(f))
	return p
}

// secureTier is a global router with API keys in front of one cell, the
// hop between them mutual TLS, and the cell's pod recording what reaches
// it.
type secureTier struct {
	g      *Global
	cell   *cell.Cell
	pod    *recordingPod
	probes *countingProber
	logs   *servertest.LogBuffer
	base   string
}

// countingProber counts the probes of the gRPC prober it wraps.
type countingProber struct {
	Prober
	n atomic.Int64
}

func (p *countingProber) Probe(ctx context.Context, c *CellView, req *cellv1.RouteRequest) (*cellv1.RouteResponse, error) {
	p.n.Add(1)
	return p.Prober.Probe(ctx, c, req)
}

func startSecureTier(t *testing.T, mod func(*Config)) *secureTier {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "tier")
	s := &secureTier{pod: startRecordingPod(t, "pod-a"), logs: &servertest.LogBuffer{}}
	log := slog.New(slog.NewTextHandler(s.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ccfg := cell.DefaultConfig()
	ccfg.CellID, ccfg.HTTPAddr, ccfg.GRPCAddr, ccfg.HealthInterval = "cell-a", "127.0.0.1:0", "127.0.0.1:0", 0
	ccfg.Pods = []cell.PodConfig{{ID: "pod-a", Address: s.pod.addr}}
	ccfg.TLS.Config = ca.Files(t, dir, "cell-a", tlstest.Options{})
	c, err := cell.New(ccfg, log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	s.cell = c

	gcfg := DefaultConfig()
	gcfg.HTTPAddr, gcfg.GRPCAddr, gcfg.ProbeTimeout = "127.0.0.1:0", "127.0.0.1:0", 5*time.Second
	gcfg.Limits.MaxBodyBytes, gcfg.Limits.MaxHeaderBytes = 8192, 4096
	gcfg.Security.KeyFile = globalKeyFile(t, dir)
	gcfg.Security.TLS = ca.Files(t, dir, "globald", tlstest.Options{})
	if mod != nil {
		mod(&gcfg)
	}
	view := CellView{ID: "cell-a", HTTPAddr: c.HTTPAddr(), GRPCAddr: c.GRPCAddr(), Alive: true, Models: gossip.NewModelSet("m")}
	var cellTLS *tlsconf.Source
	if gcfg.Security.TLS.Enabled() {
		if cellTLS, err = tlsconf.NewSource(gcfg.Security.TLS); err != nil {
			t.Fatal(err)
		}
	}
	var creds = newGRPCProber(nil, nil)
	if cellTLS != nil {
		creds = newGRPCProber(nil, cellTLS.ClientConfig())
	}
	s.probes = &countingProber{Prober: creds}
	g, err := New(gcfg, StaticDirectory{view}, s.probes, log)
	if err != nil {
		t.Fatal(err)
	}
	gctx, gcancel := context.WithCancel(context.Background())
	gdone := make(chan error, 1)
	go func() { gdone <- g.Run(gctx) }()
	t.Cleanup(func() { gcancel(); <-gdone; creds.close() })
	s.g, s.base = g, "http://"+g.HTTPAddr()
	return s
}

func (s *secureTier) call(t *testing.T, method, path, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(method, s.base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const tierCompletion = `{"model":"m","prompt":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17],"max_tokens":1}`

// TestGlobalRejections checks every HTTP rejection path of the global tier
// (keys, scopes, tenant limits, salts, models no cell serves, sizes) and
// what a request that gets through carries over the mutual-TLS hop.
func TestGlobalRejections(t *testing.T) {
	s := startSecureTier(t, nil)
	bearer := func(k string) map[string]string { return map[string]string{"Authorization": "Bearer " + k} }
	tests := []struct {
		name         string
		method, path string
		body         string
		hdr          map[string]string
		wantStatus   int
		wantCode     string
		wantRetry    bool
	}{
		{"no key", "POST", "/v1/completions", tierCompletion, nil, 401, "missing_api_key", false},
		{"malformed header", "POST", "/v1/completions", tierCompletion, map[string]string{"Authorization": "Token abc"}, 401, "invalid_api_key", false},
		{"unknown key", "POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, bearer("stolen"), 401, "invalid_api_key", false},
		{"no key for the model list", "GET", "/v1/models", "", nil, 401, "missing_api_key", false},
		{"no key for a model", "GET", "/v1/models/m", "", nil, 401, "missing_api_key", false},
		{"admin key on the data plane", "POST", "/v1/completions", tierCompletion, bearer("ops-key"), 403, "insufficient_scope", false},
		{"inference key on the cells", "GET", "/v1/global/cells", "", bearer("lab-key"), 403, "insufficient_scope", false},
		{"inference key on the dry run", "POST", "/v1/global/route", `{"model":"m","tokenIds":[1]}`, bearer("lab-key"), 403, "insufficient_scope", false},
		{"inference key on drain", "POST", "/v1/global/cells/cell-a:drain", "{}", bearer("lab-key"), 403, "insufficient_scope", false},
		{"inference key on metrics", "GET", "/metrics", "", bearer("lab-key"), 403, "insufficient_scope", false},
		{"a tenant header is no key", "POST", "/v1/completions", tierCompletion, map[string]string{"X-Cellrouter-Tenant": "acme"}, 401, "missing_api_key", false},
		{"reserved salt", "POST", "/v1/completions", `{"model":"m","prompt":[1],"cache_salt":"tenant:acme"}`, bearer("lab-key"), 400, "invalid_cache_salt", false},
		{"model no cell serves", "POST", "/v1/completions", `{"model":"gpt-nope","prompt":[1,2,3]}`, bearer("lab-key"), 404, "model_not_found", false},
		{"body over the limit", "POST", "/v1/completions", `{"model":"m","prompt":"` + strings.Repeat("x", 9000) + `"}`, bearer("lab-key"), 413, "body_too_large", false},
		{"headers over the limit", "POST", "/v1/completions", tierCompletion, map[string]string{"Authorization": "Bearer lab-key", "X-Pad": strings.Repeat("p", 5000)}, 431, "headers_too_large", false},
		{"first of acme's requests", "POST", "/v1/completions", tierCompletion, bearer("acme-key"), 200, "", false},
		{"acme past its rate", "POST", "/v1/completions", tierCompletion, bearer("acme-key"), 429, "rate_limit_exceeded", true},
		{"admin key on the cells", "GET", "/v1/global/cells", "", bearer("ops-key"), 200, "", false},
		{"health needs nothing", "GET", "/healthz", "", nil, 200, "", false},
		{"the OpenAPI document needs nothing", "GET", "/openapi/global.swagger.json", "", nil, 200, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.pod.count()
			code, h, body := s.call(t, tt.method, tt.path, tt.body, tt.hdr)
			if code != tt.wantStatus {
				t.Fatalf("got %d %s, want %d", code, body, tt.wantStatus)
			}
			if got := h.Get("Retry-After") != ""; got != tt.wantRetry {
				t.Errorf("Retry-After %q, want present %v", h.Get("Retry-After"), tt.wantRetry)
			}
			if tt.wantCode == "" {
				return
			}
			if got := strings.Trim(string(servertest.ErrorBody(t, body).Code), `"`); got != tt.wantCode {
				t.Errorf("got %s, want code %s", body, tt.wantCode)
			}
			if s.pod.count() != before {
				t.Error("a refused request reached the pod")
			}
		})
	}
	if n := s.probes.n.Load(); n != 0 {
		t.Errorf("%d probes for refused requests and a cold prompt, want 0", n)
	}

	// What got through: over the mutual-TLS hop, the cell believed the
	// tenant globald named; the key stopped at globald; the salt is acme's.
	if s.pod.count() != 1 {
		t.Fatalf("the pod served %d requests, want 1", s.pod.count())
	}
	got := s.pod.last()
	if got.header.Get("X-Cellrouter-Tenant") != "acme" || got.header.Get("Authorization") != "" || got.body["cache_salt"] != "tenant:acme" {
		t.Errorf("the pod saw tenant %q, authorization %q, cache_salt %v; want acme, none, tenant:acme",
			got.header.Get("X-Cellrouter-Tenant"), got.header.Get("Authorization"), got.body["cache_salt"])
	}
	_, _, metrics := s.call(t, "GET", "/metrics", "", bearer("ops-key"))
	for _, want := range []string{
		`cellrouter_tenant_requests_total{outcome="rate_limited",tenant="acme"} 1`,
		`cellrouter_tenant_requests_total{outcome="admitted",tenant="acme"} 1`,
		`cellrouter_auth_rejected_total{reason="forbidden"} 5`,
		`cellrouter_limit_hits_total{limit="body_size"} 1`,
		`cellrouter_limit_hits_total{limit="header_size"} 1`,
		`cellrouter_global_requests_total{outcome="model_not_found",path="unrouted"} 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, k := range []string{"acme-key", "lab-key", "ops-key", "stolen"} {
		if strings.Contains(s.logs.String(), k) {
			t.Errorf("the logs hold the key %q", k)
		}
	}
}

// TestGlobalGRPCRejections checks the gRPC rejection paths of
// GlobalService: the data plane (Complete) and the control plane.
func TestGlobalGRPCRejections(t *testing.T) {
	s := startSecureTier(t, nil)
	conn, err := grpc.NewClient(s.g.GRPCAddr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := globalv1.NewGlobalServiceClient(conn)
	ctxWith := func(key string) (context.Context, context.CancelFunc) {
		ctx := context.Background()
		if key != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
		}
		return context.WithTimeout(ctx, 20*time.Second)
	}
	complete := func(key string) error {
		ctx, cancel := ctxWith(key)
		defer cancel()
		st, err := c.Complete(ctx, &globalv1.CompleteRequest{Body: []byte(tierCompletion)})
		if err != nil {
			return err
		}
		for {
			if _, err := st.Recv(); err == io.EOF {
				return nil
			} else if err != nil {
				return err
			}
		}
	}
	for _, tt := range []struct {
		name string
		key  string
		want codes.Code
	}{
		{"no key", "", codes.Unauthenticated},
		{"unknown key", "stolen", codes.Unauthenticated},
		{"admin key", "ops-key", codes.PermissionDenied},
		{"inference key", "lab-key", codes.OK},
	} {
		if err := complete(tt.key); status.Code(err) != tt.want {
			t.Errorf("Complete, %s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	if got := s.pod.last().header.Get("X-Cellrouter-Tenant"); got != "lab" {
		t.Errorf("the gRPC data plane's tenant at the pod: got %q, want lab", got)
	}
	for _, tt := range []struct {
		name string
		key  string
		want codes.Code
	}{
		{"no key", "", codes.Unauthenticated},
		{"inference key", "lab-key", codes.PermissionDenied},
		{"admin key", "ops-key", codes.OK},
	} {
		ctx, cancel := ctxWith(tt.key)
		_, err := c.ListCells(ctx, &globalv1.ListCellsRequest{})
		cancel()
		if status.Code(err) != tt.want {
			t.Errorf("ListCells, %s: got %v, want %v", tt.name, err, tt.want)
		}
		ctx, cancel = ctxWith(tt.key)
		_, err = c.DrainCell(ctx, &globalv1.DrainCellRequest{Id: "cell-a", Cancel: true})
		cancel()
		if status.Code(err) != tt.want {
			t.Errorf("DrainCell, %s: got %v, want %v", tt.name, err, tt.want)
		}
	}
	// Server reflection needs a key too (of any scope).
	if _, err := reflectionWithKey(conn, ""); status.Code(err) != codes.Unauthenticated {
		t.Errorf("reflection without a key: got %v, want Unauthenticated", err)
	}
	if _, err := reflectionWithKey(conn, "lab-key"); err != nil {
		t.Errorf("reflection with a key: %v", err)
	}
}

// TestGlobalRefusesAnImpostorCell checks that with mutual TLS the global
// tier neither probes nor hands off to a cell whose certificate its CA did
// not sign, and reaches a genuine one.
func TestGlobalRefusesAnImpostorCell(t *testing.T) {
	dir := t.TempDir()
	ca, impostorCA := tlstest.NewCA(t, "tier"), tlstest.NewCA(t, "impostor")
	pod := startRecordingPod(t, "pod-x")
	cfg := cell.DefaultConfig()
	cfg.CellID, cfg.HTTPAddr, cfg.GRPCAddr, cfg.HealthInterval = "cell-x", "127.0.0.1:0", "127.0.0.1:0", 0
	cfg.Pods = []cell.PodConfig{{ID: "pod-x", Address: pod.addr}}
	cfg.TLS.Config = impostorCA.Files(t, dir, "cell-x", tlstest.Options{})
	cfg.TLS.ClientAuth = tlsconf.VerifyClientCertIfGiven
	c := startTestCellWith(t, "cell-x", &sync.Map{}, func(cc *cell.Config) { *cc = cfg })
	toks := tokens(5, 64*16)
	c.hold(t, "pod-x", toks, 32)
	g := startGlobalWith(t, StaticDirectory{c.view(t)}, func(gc *Config) {
		gc.Security.TLS = ca.Files(t, dir, "globald", tlstest.Options{})
	})
	resp, body := post(t, "http://"+g.HTTPAddr()+"/v1/completions", map[string]any{"model": "m", "prompt": toks, "max_tokens": 1})
	if resp.StatusCode < 500 || pod.count() != 0 {
		t.Fatalf("an impostor cell got the request: %d %s, pod served %d", resp.StatusCode, body, pod.count())
	}
	d, err := g.Router().Decide(context.Background(), &Request{Model: "m", TokenIDs: toks})
	if err != nil || len(d.Answers) != 1 || d.Answers[0].Err == nil {
		t.Fatalf("probe of the impostor: %+v, %v; want a failed probe", d, err)
	}
}

// TestGlobalWithoutTierTLSForwardsTheKey checks the set-up without mutual
// TLS between the tiers: the cell cannot believe globald's tenant, so the
// key travels along and the cell checks it itself.
func TestGlobalWithoutTierTLSForwardsTheKey(t *testing.T) {
	dir := t.TempDir()
	keys := globalKeyFile(t, dir)
	pod := startRecordingPod(t, "pod-k")
	c := startTestCellWith(t, "cell-k", &sync.Map{}, func(cc *cell.Config) {
		cc.Pods = []cell.PodConfig{{ID: "pod-k", Address: pod.addr}}
		cc.Auth.KeyFile = keys
	})
	g := startGlobalWith(t, StaticDirectory{c.view(t)}, func(gc *Config) { gc.Security.KeyFile = keys })
	req, _ := http.NewRequest("POST", "http://"+g.HTTPAddr()+"/v1/completions", strings.NewReader(tierCompletion))
	req.Header.Set("Authorization", "Bearer lab-key")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("got %d %s", resp.StatusCode, b)
	}
	got := pod.last()
	if got.header.Get("X-Cellrouter-Tenant") != "lab" || got.header.Get("Authorization") != "" {
		t.Errorf("the pod saw tenant %q, authorization %q; want lab (checked by the cell), no key", got.header.Get("X-Cellrouter-Tenant"), got.header.Get("Authorization"))
	}
}

// TestModelServed checks the global tier's decision of a model no cell
// serves, from the models the cells advertise.
func TestModelServed(t *testing.T) {
	known := func(id string, models ...string) CellView {
		return CellView{ID: id, HTTPAddr: "x:1", Alive: true, Models: gossip.NewModelSet(models...)}
	}
	unknown := CellView{ID: "u", HTTPAddr: "x:1", Alive: true}
	dead := known("d", "z")
	dead.Alive = false
	tests := []struct {
		name  string
		cells []CellView
		model string
		want  bool
	}{
		{"one cell serves it", []CellView{known("a", "m"), known("b", "n")}, "n", true},
		{"no cell serves it", []CellView{known("a", "m"), known("b", "n")}, "x", false},
		{"a cell does not know its models", []CellView{known("a", "m"), unknown}, "x", true},
		{"only a dead cell serves it", []CellView{known("a", "m"), dead}, "z", false},
		{"no model named", []CellView{known("a", "m")}, "", true},
		{"no usable cell", []CellView{dead}, "x", true},
	}
	for _, tt := range tests {
		rt, err := NewRouter(DefaultConfig(), StaticDirectory(tt.cells), nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := rt.ModelServed(tt.model); got != tt.want {
			t.Errorf("%s: ModelServed(%q) = %v, want %v", tt.name, tt.model, got, tt.want)
		}
	}
}

// reflectionWithKey lists the services of conn's server by server
// reflection, with key in the metadata ("" for none).
func reflectionWithKey(conn *grpc.ClientConn, key string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if key != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+key)
	}
	st, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		return nil, err
	}
	// A refused stream ends Send with io.EOF; Recv has its status.
	if err := st.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil && err != io.EOF {
		return nil, err
	}
	resp, err := st.Recv()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		out = append(out, s.GetName())
	}
	return out, nil
}
