package edge

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cellrouter/cellrouter/internal/auth"
)

// TestRequireRejections sends every kind of request through Require and
// checks the answer: each rejection path of the HTTP data and control
// planes, with its status, OpenAI code and headers, and what a request
// that gets through carries.
func TestRequireRejections(t *testing.T) {
	type tc struct {
		name        string
		need        auth.Scope
		auth        []string // Authorization values
		tenantHdr   string   // X-Cellrouter-Tenant the client sends
		tls         *tls.ConnectionState
		wantStatus  int
		wantCode    string // OpenAI error code; "" for a success
		wantTenant  string // the principal's tenant on success
		wantHeader  string // the tenant header the handler saw
		wantChallng bool   // WWW-Authenticate expected
	}
	tests := []tc{
		{name: "no key", need: auth.ScopeInference, wantStatus: 401, wantCode: "missing_api_key", wantChallng: true},
		{name: "empty bearer", need: auth.ScopeInference, auth: []string{"Bearer "}, wantStatus: 401, wantCode: "missing_api_key", wantChallng: true},
		{name: "basic scheme", need: auth.ScopeInference, auth: []string{"Basic YWNtZTprZXk="}, wantStatus: 401, wantCode: "invalid_api_key", wantChallng: true},
		{name: "unknown key", need: auth.ScopeInference, auth: []string{"Bearer stolen-key"}, wantStatus: 401, wantCode: "invalid_api_key", wantChallng: true},
		{name: "two keys", need: auth.ScopeInference, auth: []string{"Bearer acme-key", "Bearer lab-key"}, wantStatus: 401, wantCode: "invalid_api_key", wantChallng: true},
		{name: "inference key on the control plane", need: auth.ScopeAdmin, auth: []string{"Bearer acme-key"}, wantStatus: 403, wantCode: "insufficient_scope", wantChallng: true},
		{name: "admin key on the data plane", need: auth.ScopeInference, auth: []string{"Bearer ops-key"}, wantStatus: 403, wantCode: "insufficient_scope", wantChallng: true},
		{name: "admin key on events-free admin route", need: auth.ScopeAdmin, auth: []string{"Bearer ops-key"}, wantStatus: 200, wantTenant: "ops", wantHeader: "ops"},
		{name: "inference key", need: auth.ScopeInference, auth: []string{"Bearer lab-key"}, wantStatus: 200, wantTenant: "lab", wantHeader: "lab"},
		{name: "a client cannot pick its tenant", need: auth.ScopeInference, auth: []string{"Bearer lab-key"}, tenantHdr: "acme", wantStatus: 200, wantTenant: "lab", wantHeader: "lab"},
		{name: "a client without a certificate cannot name a tenant instead of a key", need: auth.ScopeInference, tenantHdr: "acme", wantStatus: 401, wantCode: "missing_api_key", wantChallng: true},
		{name: "TLS without a verified certificate is a client", need: auth.ScopeInference, tenantHdr: "acme", tls: &tls.ConnectionState{}, wantStatus: 401, wantCode: "missing_api_key", wantChallng: true},
	}
	g, m, _ := newTestGuard(t, GuardConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("POST", "/v1/completions", nil)
			for _, a := range tt.auth {
				req.Header.Add("Authorization", a)
			}
			if tt.tenantHdr != "" {
				req.Header.Set(TenantHeader, tt.tenantHdr)
			}
			req.TLS = tt.tls
			rec := httptest.NewRecorder()
			g.Require(tt.need, echo).ServeHTTP(rec, req)
			if rec.Code != tt.wantStatus {
				t.Fatalf("status: got %d (%s), want %d", rec.Code, rec.Body, tt.wantStatus)
			}
			if got := rec.Header().Get("WWW-Authenticate") != ""; got != tt.wantChallng {
				t.Errorf("WWW-Authenticate: got %q, want present %v", rec.Header().Get("WWW-Authenticate"), tt.wantChallng)
			}
			if tt.wantCode != "" {
				d := errorOf(t, rec.Body.String())
				if codeOf(d) != tt.wantCode || d.Type != "invalid_request_error" || d.Message == "" {
					t.Errorf("body: got %+v, want code %s of type invalid_request_error", d, tt.wantCode)
				}
				for _, a := range tt.auth {
					if k := strings.TrimPrefix(a, "Bearer "); len(k) > 3 && strings.Contains(rec.Body.String(), k) {
						t.Errorf("the answer quotes the key: %s", rec.Body)
					}
				}
				return
			}
			if got := rec.Header().Get("X-Tenant"); got != tt.wantTenant {
				t.Errorf("principal tenant: got %q, want %q", got, tt.wantTenant)
			}
			if got := rec.Header().Get("X-Saw-Tenant-Header"); got != tt.wantHeader {
				t.Errorf("tenant header the handler saw: got %q, want %q", got, tt.wantHeader)
			}
			if got := rec.Header().Get("X-Saw-Authorization"); got != "" {
				t.Errorf("the key reached the handler: %q", got)
			}
		})
	}
	if got := counter(m.rejected.WithLabelValues("missing_key")); got != 4 {
		t.Errorf("missing_key rejections: got %v, want 4", got)
	}
	if got := counter(m.rejected.WithLabelValues("invalid_key")); got != 3 {
		t.Errorf("invalid_key rejections: got %v, want 3", got)
	}
	if got := counter(m.rejected.WithLabelValues("forbidden")); got != 2 {
		t.Errorf("forbidden rejections: got %v, want 2", got)
	}
}

// TestRequireTenantLimits checks the 429s: acme may make 1 request per
// second with a burst of 2, and have 1 in flight.
func TestRequireTenantLimits(t *testing.T) {
	g, m, clk := newTestGuard(t, GuardConfig{})
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/block" {
			entered <- struct{}{}
			<-release
		}
	})
	h := g.Require(auth.ScopeInference, blocking)
	send := func(path string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", path, nil)
		req.Header.Set("Authorization", "Bearer acme-key")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	// One request in flight: a second is refused for concurrency.
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- send("/block") }()
	<-entered
	rec := send("/x")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || codeOf(errorOf(t, rec.Body.String())) != "rate_limit_exceeded" ||
		errorOf(t, rec.Body.String()).Type != TypeRequests {
		t.Fatalf("second in flight: got %d Retry-After %q %s, want 429 rate_limit_exceeded with Retry-After 1", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	if got := counter(m.inflight.WithLabelValues("acme")); got != 1 {
		t.Errorf("in flight gauge: got %v, want 1", got)
	}
	close(release)
	if r := <-done; r.Code != 200 {
		t.Fatalf("the blocked request: got %d", r.Code)
	}
	// The burst of 2 was spent by the first request and... the second
	// was refused without cost, so one token is left.
	if rec := send("/x"); rec.Code != 200 {
		t.Fatalf("second token: got %d %s", rec.Code, rec.Body)
	}
	rec = send("/x")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("empty bucket: got %d Retry-After %q, want 429 with Retry-After 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	clk.t = clk.t.Add(time.Second)
	if rec := send("/x"); rec.Code != 200 {
		t.Fatalf("a second later: got %d", rec.Code)
	}
	if got := counter(m.requests.WithLabelValues("acme", "admitted")); got != 3 {
		t.Errorf("admitted: got %v, want 3", got)
	}
	if got := counter(m.requests.WithLabelValues("acme", "rate_limited")); got != 1 {
		t.Errorf("rate_limited: got %v, want 1", got)
	}
	if got := counter(m.requests.WithLabelValues("acme", "concurrency_limited")); got != 1 {
		t.Errorf("concurrency_limited: got %v, want 1", got)
	}
	if got := counter(m.inflight.WithLabelValues("acme")); got != 0 {
		t.Errorf("in flight gauge at the end: got %v, want 0", got)
	}
	// Limits count the data plane only: control-plane calls of an
	// exhausted tenant still pass.
	req := httptest.NewRequest("GET", "/v1/cell/state", nil)
	req.Header.Set("Authorization", "Bearer lab-key")
	for range 10 {
		rec := httptest.NewRecorder()
		g.Require(auth.ScopeAdmin, blocking).ServeHTTP(rec, req.Clone(req.Context()))
		if rec.Code != 200 {
			t.Fatalf("control plane: got %d", rec.Code)
		}
	}
}

// TestRequirePeers checks whom a server that trusts peers believes: a
// verified peer names the tenant (known to the key file or not) and may do
// anything; anyone else is a client.
func TestRequirePeers(t *testing.T) {
	tests := []struct {
		name       string
		trust      bool
		tls        *tls.ConnectionState
		tenantHdr  string
		authz      string
		wantStatus int
		wantTenant string
		wantPeer   bool
	}{
		{"peer names a known tenant", true, verified(), "acme", "", 200, "acme", true},
		{"peer names a tenant of its own", true, verified(), "globex", "", 200, "globex", true},
		{"peer names no tenant", true, verified(), "", "", 200, "", true},
		{"peer names a malformed tenant", true, verified(), "a b", "", 200, "", true},
		{"peer's limits are not counted again", true, verified(), "acme", "", 200, "acme", true},
		{"untrusted server: a peer is a client", false, verified(), "acme", "", 401, "", false},
		{"untrusted server: a peer with a key", false, verified(), "acme", "Bearer lab-key", 200, "lab", false},
		{"plaintext client naming a tenant", true, nil, "acme", "Bearer lab-key", 200, "lab", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _, _ := newTestGuard(t, GuardConfig{TrustPeers: tt.trust})
			for i := range 3 { // acme allows 2 at once and 1 in flight: peers are not limited
				req := httptest.NewRequest("POST", "/v1/completions", nil)
				req.TLS = tt.tls
				if tt.tenantHdr != "" {
					req.Header.Set(TenantHeader, tt.tenantHdr)
				}
				if tt.authz != "" {
					req.Header.Set("Authorization", tt.authz)
				}
				rec := httptest.NewRecorder()
				g.Require(auth.ScopeInference, echo).ServeHTTP(rec, req)
				if rec.Code != tt.wantStatus {
					t.Fatalf("request %d: got %d %s, want %d", i, rec.Code, rec.Body, tt.wantStatus)
				}
				if rec.Code != 200 {
					return
				}
				if got := rec.Header().Get("X-Tenant"); got != tt.wantTenant {
					t.Errorf("tenant: got %q, want %q", got, tt.wantTenant)
				}
				if got := rec.Header().Get("X-Saw-Tenant-Header"); got != tt.wantTenant {
					t.Errorf("tenant header: got %q, want %q", got, tt.wantTenant)
				}
				if got := rec.Header().Get("X-Peer") == "yes"; got != tt.wantPeer {
					t.Errorf("peer: got %v, want %v", got, tt.wantPeer)
				}
			}
		})
	}
}

// TestRequireWithoutKeys checks that a guard without a key file lets
// everything through, keeps the client's Authorization (it may be the
// engine's own key) and still drops a tenant header a client sent.
func TestRequireWithoutKeys(t *testing.T) {
	g := NewGuard(GuardConfig{TrustPeers: true}, nil)
	if g.Enabled() {
		t.Fatal("a guard without keys says it is enabled")
	}
	req := httptest.NewRequest("POST", "/v1/completions", nil)
	req.Header.Set("Authorization", "Bearer engine-key")
	req.Header.Set(TenantHeader, "acme")
	rec := httptest.NewRecorder()
	g.Require(auth.ScopeAdmin, echo).ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("X-Saw-Tenant-Header") != "" || rec.Header().Get("X-Saw-Authorization") != "Bearer engine-key" ||
		rec.Header().Get("X-Scopes") != auth.ScopeAll.String() {
		t.Errorf("got %d tenant header %q authorization %q scopes %q; want 200, no tenant, the client's authorization, every scope",
			rec.Code, rec.Header().Get("X-Saw-Tenant-Header"), rec.Header().Get("X-Saw-Authorization"), rec.Header().Get("X-Scopes"))
	}
}

// TestKeepAuthorization checks that a guard told to keep the key passes
// it to the handler.
func TestKeepAuthorization(t *testing.T) {
	g, _, _ := newTestGuard(t, GuardConfig{KeepAuthorization: true})
	req := httptest.NewRequest("POST", "/v1/completions", nil)
	req.Header.Set("Authorization", "Bearer lab-key")
	rec := httptest.NewRecorder()
	g.Require(auth.ScopeInference, echo).ServeHTTP(rec, req)
	if got := rec.Header().Get("X-Saw-Authorization"); got != "Bearer lab-key" {
		t.Errorf("authorization: got %q, want the client's", got)
	}
}

// TestLoadKeyFile checks that a reload swaps keys under the guard and that
// a bad file keeps the old ones.
func TestLoadKeyFile(t *testing.T) {
	g, m, _ := newTestGuard(t, GuardConfig{})
	status := func(key string) int {
		req := httptest.NewRequest("GET", "/v1/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		rec := httptest.NewRecorder()
		g.Require(auth.ScopeInference, echo).ServeHTTP(rec, req)
		return rec.Code
	}
	if status("lab-key") != 200 || status("new-key") != 401 {
		t.Fatal("before the reload")
	}
	f := "tenants: [{name: lab}]\nkeys:\n  - {sha256: " + auth.HashKey("new-key").String() + ", tenant: lab, scopes: [inference]}\n"
	if err := g.LoadKeyFile([][]byte{[]byte(f)}); err != nil {
		t.Fatal(err)
	}
	if status("lab-key") != 401 || status("new-key") != 200 {
		t.Error("after the reload: the old key still works or the new one does not")
	}
	if err := g.LoadKeyFile([][]byte{[]byte("keys: [{sha256: nothex}]")}); err == nil {
		t.Fatal("a bad key file was loaded")
	}
	if status("new-key") != 200 {
		t.Error("a bad key file dropped the keys in force")
	}
	if got := counter(m.reloads.WithLabelValues("keys", "error")); got != 1 {
		t.Errorf("reload errors: got %v, want 1", got)
	}
	if got := counter(m.keys); got != 1 {
		t.Errorf("keys gauge: got %v, want 1", got)
	}
}

// TestPeerRoles checks that a verified peer acts with the scopes of the
// roles its certificate names, not with every scope: globald's
// certificate reaches the data plane and the probe with the tenant it
// names, a publisher's only events, an admin's only the control plane; a
// certificate without a role gets GuardConfig.DefaultPeerRoles (global by
// default), and a peer whose role lacks the scope may still use an API key.
func TestPeerRoles(t *testing.T) {
	role := func(r auth.Role) string { return auth.RoleURI(r) }
	tests := []struct {
		name      string
		def       []auth.Role
		uris      []string
		authz     string
		need      auth.Scope
		tenant    string
		wantCode  int
		wantRoles string
		wantTen   string
	}{
		{"global: inference with its tenant", nil, []string{role(auth.RoleGlobal)}, "", auth.ScopeInference, "acme", 200, "global", "acme"},
		{"global: probe", nil, []string{role(auth.RoleGlobal)}, "", auth.ScopeRoute, "", 200, "global", ""},
		{"global: no admin", nil, []string{role(auth.RoleGlobal)}, "", auth.ScopeAdmin, "", 403, "", ""},
		{"global: no events", nil, []string{role(auth.RoleGlobal)}, "", auth.ScopeEvents, "", 403, "", ""},
		{"no role: global by default", nil, nil, "", auth.ScopeInference, "acme", 200, "global", "acme"},
		{"no role: no admin by default", nil, []string{"spiffe://example.org/ns/x"}, "", auth.ScopeAdmin, "", 403, "", ""},
		{"no role, default none", []auth.Role{auth.RoleNone}, nil, "", auth.ScopeInference, "", 403, "", ""},
		{"no role, default global+cell", []auth.Role{auth.RoleGlobal, auth.RoleCell}, nil, "", auth.ScopeReplica, "", 200, "global+cell", ""},
		{"publisher: events", nil, []string{role(auth.RolePublisher), auth.PodURI("pod-a")}, "", auth.ScopeEvents, "", 200, "publisher", ""},
		{"publisher: no inference", nil, []string{role(auth.RolePublisher)}, "", auth.ScopeInference, "", 403, "", ""},
		{"publisher: names no tenant", nil, []string{role(auth.RolePublisher), role(auth.RoleGlobal)}, "", auth.ScopeEvents, "acme", 200, "publisher+global", "acme"},
		{"cell: replica only", nil, []string{role(auth.RoleCell)}, "", auth.ScopeReplica, "acme", 200, "cell", ""},
		{"cell: no inference", nil, []string{role(auth.RoleCell)}, "", auth.ScopeInference, "", 403, "", ""},
		{"admin: control plane", nil, []string{role(auth.RoleAdmin)}, "", auth.ScopeAdmin, "", 200, "admin", ""},
		{"admin: no events", nil, []string{role(auth.RoleAdmin)}, "", auth.ScopeEvents, "", 403, "", ""},
		{"unknown role grants nothing", nil, []string{role("root")}, "", auth.ScopeInference, "", 403, "", ""},
		{"pods without publisher grant nothing", nil, []string{role(auth.RoleGlobal), auth.PodURI("pod-a")}, "", auth.ScopeInference, "", 403, "", ""},
		{"role lacks the scope, key has it", nil, []string{role(auth.RoleGlobal)}, "Bearer ops-key", auth.ScopeAdmin, "", 200, "", "ops"},
		{"role lacks the scope, key lacks it too", nil, []string{role(auth.RoleGlobal)}, "Bearer acme-key", auth.ScopeAdmin, "", 403, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, _, _ := newTestGuard(t, GuardConfig{TrustPeers: true, DefaultPeerRoles: tt.def})
			var got auth.Principal
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got, _ = PrincipalFrom(r.Context()) })
			req := httptest.NewRequest("POST", "/x", nil)
			req.TLS = verified(tt.uris...)
			if tt.tenant != "" {
				req.Header.Set(TenantHeader, tt.tenant)
			}
			if tt.authz != "" {
				req.Header.Set("Authorization", tt.authz)
			}
			rec := httptest.NewRecorder()
			g.Require(tt.need, h).ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tt.wantCode)
			}
			if rec.Code != 200 {
				if e := errorOf(t, rec.Body.String()); string(e.Code) != `"insufficient_scope"` {
					t.Errorf("got error code %v, want insufficient_scope", e.Code)
				}
				return
			}
			if got.Roles != tt.wantRoles || got.TenantName() != tt.wantTen {
				t.Errorf("got roles %q tenant %q, want %q %q", got.Roles, got.TenantName(), tt.wantRoles, tt.wantTen)
			}
		})
	}
}
