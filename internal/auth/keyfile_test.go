package auth

import (
	"errors"
	"strings"
	"testing"
)

// keyFile returns a key file with one tenant per spec and the keys.
func testKeyFile(keys map[string]string) string {
	var b strings.Builder
	b.WriteString("tenants:\n  - {name: acme, requests_per_second: 2.5, max_concurrent: 3}\n  - {name: shared, isolated: false}\n  - {name: ops}\nkeys:\n")
	for key, rest := range keys {
		b.WriteString("  - {sha256: " + HashKey(key).String() + ", " + rest + "}\n")
	}
	return b.String()
}

func TestParseKeyFile(t *testing.T) {
	tab, err := ParseKeyFile([]byte(testKeyFile(map[string]string{
		"acme-key":   "tenant: acme, scopes: [inference]",
		"ops-key":    "tenant: ops, scopes: [admin, events], name: the operators",
		"shared-key": "tenant: shared, scopes: [inference, admin]",
	})))
	if err != nil {
		t.Fatal(err)
	}
	if got := tab.Len(); got != 3 {
		t.Errorf("keys: got %d, want 3", got)
	}
	acme := tab.Tenant("acme")
	if acme == nil || !acme.Isolated || acme.Limits != (Limits{RequestsPerSecond: 2.5, Burst: 3, MaxConcurrent: 3}) {
		t.Errorf("acme: got %+v, want isolated, 2.5 rps, burst 3 (rounded up), 3 concurrent", acme)
	}
	if s := tab.Tenant("shared"); s == nil || s.Isolated {
		t.Errorf("shared: got %+v, want not isolated", s)
	}
	if got := []string{tab.Tenants()[0].Name, tab.Tenants()[1].Name, tab.Tenants()[2].Name}; strings.Join(got, ",") != "acme,shared,ops" {
		t.Errorf("tenant order: got %v, want the file's", got)
	}
	for _, tc := range []struct {
		header, tenant string
		scopes         Scope
	}{
		{"Bearer acme-key", "acme", ScopeInference},
		{"bearer   ops-key", "ops", ScopeAdmin | ScopeEvents},
		{"BEARER shared-key", "shared", ScopeInference | ScopeAdmin},
	} {
		p, err := tab.Authenticate(tc.header)
		if err != nil || p.TenantName() != tc.tenant || p.Scopes != tc.scopes || p.KeyID == "" {
			t.Errorf("Authenticate(%q) = %+v, %v; want tenant %s scopes %v", tc.header, p, err, tc.tenant, tc.scopes)
		}
	}
	_, err = tab.Authenticate("Bearer other-key")
	var ae *Error
	if !errors.Is(err, ErrInvalidKey) || !errors.As(err, &ae) || ae.KeyID != HashKey("other-key").ID() {
		t.Errorf("unknown key: got %v, want ErrInvalidKey naming the key's id", err)
	}
	if strings.Contains(err.Error(), "other-key") {
		t.Errorf("error %q quotes the key", err)
	}
}

func TestParseKeyFileErrors(t *testing.T) {
	h := HashKey("k").String()
	tests := []struct {
		name, file, want string
	}{
		{"not yaml", "tenants: [", "bad key file"},
		{"unknown field", "tenants:\n  - {name: a, rps: 3}\n", "field rps not found"},
		{"bad tenant name", "tenants:\n  - {name: 'a b'}\n", "tenants[0].name"},
		{"empty tenant name", "tenants:\n  - {name: ''}\n", "tenants[0].name"},
		{"duplicate tenant", "tenants:\n  - {name: a}\n  - {name: a}\n", "tenants[1].name = \"a\": declared twice"},
		{"negative rate", "tenants:\n  - {name: a, requests_per_second: -1}\n", "tenants[0].requests_per_second"},
		{"nan rate", "tenants:\n  - {name: a, requests_per_second: .nan}\n", "tenants[0].requests_per_second"},
		{"negative burst", "tenants:\n  - {name: a, burst: -1}\n", "tenants[0].burst"},
		{"negative concurrency", "tenants:\n  - {name: a, max_concurrent: -2}\n", "tenants[0].max_concurrent"},
		{"short hash", "tenants: [{name: a}]\nkeys:\n  - {sha256: abcd, tenant: a, scopes: [admin]}\n", "keys[0].sha256"},
		{"raw key instead of hash", "tenants: [{name: a}]\nkeys:\n  - {sha256: crk-secret, tenant: a, scopes: [admin]}\n", "keys[0].sha256"},
		{"duplicate key", "tenants: [{name: a}]\nkeys:\n  - {sha256: " + h + ", tenant: a, scopes: [admin]}\n  - {sha256: " + h + ", tenant: a, scopes: [events]}\n", "keys[1].sha256: the same key"},
		{"undeclared tenant", "tenants: [{name: a}]\nkeys:\n  - {sha256: " + h + ", tenant: b, scopes: [admin]}\n", "keys[0].tenant = \"b\""},
		{"no scopes", "tenants: [{name: a}]\nkeys:\n  - {sha256: " + h + ", tenant: a}\n", "keys[0].scopes: empty"},
		{"unknown scope", "tenants: [{name: a}]\nkeys:\n  - {sha256: " + h + ", tenant: a, scopes: [inference, root]}\n", "keys[0].scopes[1] = \"root\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseKeyFile([]byte(tt.file))
			if !errors.Is(err, ErrKeyFile) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an ErrKeyFile error containing %q", err, tt.want)
			}
		})
	}
}

func TestEmptyKeyFile(t *testing.T) {
	for _, empty := range []string{"", " \n\t"} {
		if _, err := ParseKeyFile([]byte(empty)); !errors.Is(err, ErrKeyFile) {
			t.Errorf("%q: got %v, want ErrKeyFile (an empty file is most likely being rewritten)", empty, err)
		}
	}
	tab, err := ParseKeyFile([]byte("keys: []\n"))
	if err != nil || tab.Len() != 0 {
		t.Fatalf("got %v, %v; want an empty table", tab, err)
	}
	if _, err := tab.Authenticate("Bearer x"); !errors.Is(err, ErrInvalidKey) {
		t.Errorf("got %v, want ErrInvalidKey", err)
	}
}

func TestNewKey(t *testing.T) {
	k1, h1, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	k2, _, _ := NewKey()
	if k1 == k2 || !strings.HasPrefix(k1, KeyPrefix) || HashKey(k1) != h1 {
		t.Errorf("NewKey: got %q, %q; want distinct %s keys whose hash is returned", k1, k2, KeyPrefix)
	}
	if got, err := ParseBearer("Bearer " + k1); err != nil || got != k1 {
		t.Errorf("ParseBearer of a new key: got %q, %v", got, err)
	}
}

func TestScope(t *testing.T) {
	if got := (ScopeInference | ScopeEvents).String(); got != "inference+events" {
		t.Errorf("String: got %q, want inference+events", got)
	}
	if got := Scope(0).String(); got != "none" {
		t.Errorf("String of no scope: got %q, want none", got)
	}
	if !ScopeAll.Has(ScopeAdmin|ScopeEvents) || ScopeInference.Has(ScopeAdmin) {
		t.Error("Has: wrong answer")
	}
	// admin holds the probe and the snapshot; neither holds admin.
	if !ScopeAdmin.Has(ScopeRoute|ScopeReplica) || ScopeRoute.Has(ScopeAdmin) || ScopeReplica.Has(ScopeRoute) || ScopeAdmin.Has(ScopeEvents) {
		t.Error("Has: admin must hold route and replica, and nothing else")
	}
	p := Principal{Scopes: ScopeInference, Tenant: &Tenant{Name: "acme"}, KeyID: "key-1"}
	if err := p.Allow(ScopeInference); err != nil {
		t.Errorf("Allow(inference): got %v, want nil", err)
	}
	err := p.Allow(ScopeAdmin)
	var ae *Error
	if !errors.Is(err, ErrForbidden) || !errors.As(err, &ae) || ae.Need != ScopeAdmin || ae.Tenant != "acme" {
		t.Errorf("Allow(admin): got %v, want ErrForbidden needing admin for acme", err)
	}
}
