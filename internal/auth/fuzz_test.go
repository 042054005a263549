package auth

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseKeyFile checks that no input makes the parser panic, that every
// refusal wraps ErrKeyFile, and that an accepted file keeps its
// invariants: every key has a declared tenant and a scope, every tenant a
// valid name and limits it can enforce.
func FuzzParseKeyFile(f *testing.F) {
	f.Add([]byte(testKeyFile(map[string]string{"k": "tenant: acme, scopes: [inference]"})))
	f.Add([]byte("tenants:\n  - name: a\n    isolated: false\n    requests_per_second: 1e300\nkeys: []\n"))
	f.Add([]byte("{}"))
	f.Add([]byte("keys:\n  - sha256: " + strings.Repeat("0", 64) + "\n    tenant: x\n    scopes: [admin]\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ParseKeyFile(data)
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error %v does not wrap ErrKeyFile", err)
			}
			return
		}
		for h, e := range tab.keys {
			if e.tenant == nil || tab.tenants[e.tenant.Name] != e.tenant || e.scopes == 0 || e.scopes&^ScopeAll != 0 || e.id != h.ID() {
				t.Fatalf("key %s: bad entry %+v", h.ID(), e)
			}
		}
		for _, ten := range tab.Tenants() {
			l := ten.Limits
			if !tenantName.MatchString(ten.Name) || l.RequestsPerSecond < 0 || l.MaxConcurrent < -1 || (l.RequestsPerSecond > 0 && l.Burst < 1) {
				t.Fatalf("tenant %+v breaks an invariant", ten)
			}
		}
	})
}

// FuzzParseBearer checks that ParseBearer never panics, accepts exactly
// the well-formed headers, returns a key that is a token68 of bounded
// length, and never quotes the header in its error.
func FuzzParseBearer(f *testing.F) {
	for _, s := range []string{"Bearer abc", "", "Basic x", "bearer a==", "Bearer a b", "Bearer \x00", "Bearer " + strings.Repeat("z", 600)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		key, err := ParseBearer(h)
		if err != nil {
			if !errors.Is(err, ErrMissingKey) && !errors.Is(err, ErrInvalidKey) {
				t.Fatalf("error %v is neither ErrMissingKey nor ErrInvalidKey", err)
			}
			if len(h) > 12 && strings.Contains(err.Error(), h) {
				t.Fatalf("error %q quotes the header", err)
			}
			return
		}
		if key == "" || len(key) > MaxKeyLen || !isToken68(key) || !strings.HasSuffix(h, key) {
			t.Fatalf("ParseBearer(%q) = %q: not a bounded token68 taken from the header", h, key)
		}
		if scheme, _, _ := strings.Cut(h, " "); !strings.EqualFold(scheme, "bearer") {
			t.Fatalf("ParseBearer(%q) accepted scheme %q", h, scheme)
		}
	})
}
