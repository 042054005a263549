package auth

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParseKeyFile checks that no input makes the parser panic, that every
// refusal wraps ErrKeyFile, and that an accepted file keeps its
// invariants: every key has a declared tenant and a scope, every tenant a
// valid name, limits it can enforce, a priority band, a positive bounded
// weight and a queue wait that is not negative.
func FuzzParseKeyFile(f *testing.F) {
	f.Add([]byte(testKeyFile(map[string]string{"k": "tenant: acme, scopes: [inference]"})))
	f.Add([]byte("tenants:\n  - name: a\n    isolated: false\n    requests_per_second: 1e300\nkeys: []\n"))
	f.Add([]byte("{}"))
	f.Add([]byte("keys:\n  - sha256: " + strings.Repeat("0", 64) + "\n    tenant: x\n    scopes: [admin]\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte(testKeyFile(map[string]string{"p": "tenant: acme, scopes: [events], pods: [pod-a, 'vllm-*']"})))
	f.Add([]byte(testKeyFile(map[string]string{"p": "tenant: acme, scopes: [admin], pods: ['*']"})))
	f.Add([]byte("tenants:\n  - {name: a, priority: critical, weight: 2.5, max_queue_wait: 3s}\n  - {name: b, priority: Sheddable, weight: 1e-9}\n"))
	f.Add([]byte("tenants:\n  - {name: a, priority: urgent, weight: 0, max_queue_wait: -1ms}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tab, err := ParseKeyFile(data)
		if err != nil {
			if !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error %v does not wrap ErrKeyFile", err)
			}
			return
		}
		for h, e := range tab.keys {
			if e.tenant == nil || tab.tenants[e.tenant.Name] != e.tenant || e.scopes == 0 || e.scopes&^ScopeAll != 0 || e.id != h.ID() ||
				(e.pods != nil && !e.scopes.Has(ScopeEvents)) {
				t.Fatalf("key %s: bad entry %+v", h.ID(), e)
			}
		}
		for _, ten := range tab.Tenants() {
			l := ten.Limits
			if !tenantName.MatchString(ten.Name) || l.RequestsPerSecond < 0 || l.MaxConcurrent < -1 || (l.RequestsPerSecond > 0 && l.Burst < 1) ||
				!ten.Priority.Valid() || !(ten.Weight > 0 && ten.Weight <= MaxWeight) || ten.FairWeight() != ten.Weight || ten.MaxQueueWait < 0 {
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

// FuzzParsePods checks that pod patterns never panic the parser, that an
// accepted set matches exactly what the naive reference matches, and that
// a refusal names the pattern at fault.
func FuzzParsePods(f *testing.F) {
	for _, s := range []string{"pod-a", "vllm-*", "*", "a*b", "", "pod a", "10.0.0.7:8000\nvllm-*", "é*"} {
		f.Add(s, "vllm-0")
	}
	f.Fuzz(func(t *testing.T, list, pod string) {
		patterns := strings.Split(list, "\n")
		set, err := ParsePods(patterns)
		if err != nil {
			if !strings.Contains(err.Error(), "pods") {
				t.Fatalf("error %q does not name the field", err)
			}
			return
		}
		if got, want := set.Match(pod), naiveMatch(patterns, pod); got != want {
			t.Fatalf("patterns %q, pod %q: got %v, want %v", patterns, pod, got, want)
		}
	})
}

// FuzzParsePeerURIs checks that a certificate's URIs never panic the role
// parser, and that an accepted grant holds only the scopes of known roles,
// names the tenant only with the global role, and restricts a publisher
// to the pods it names.
func FuzzParsePeerURIs(f *testing.F) {
	for _, s := range []string{
		RoleURI(RoleGlobal), RoleURI(RolePublisher) + "\n" + PodURI("vllm-*"), RoleURI("root"),
		"spiffe://x/y", PodURI("a") + "\n" + RoleURI(RoleAdmin), RoleURI(RoleCell) + "\n" + RoleURI(RoleNone), "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		uris := strings.Split(list, "\n")
		g, err := ParsePeerURIs(uris, []Role{RoleGlobal})
		if err != nil {
			if g != (PeerGrant{}) {
				t.Fatalf("a refused certificate grants %+v", g)
			}
			return
		}
		if g.Scopes&^ScopeAll != 0 || g.Roles == "" {
			t.Fatalf("grant %+v: unknown scopes or no roles", g)
		}
		if g.Tenant != strings.Contains("+"+g.Roles+"+", "+global+") {
			t.Fatalf("grant %+v: names the tenant without the global role, or the reverse", g)
		}
		if g.Scopes.Has(ScopeEvents) != (g.Pods != nil) {
			t.Fatalf("grant %+v: pods without events, or events without a pod set", g)
		}
		if g.Pods != nil {
			var pods []string
			for _, u := range uris {
				if strings.HasPrefix(u, PodURIPrefix) {
					pods = append(pods, u[len(PodURIPrefix):])
				}
			}
			for _, pod := range []string{"pod-a", "vllm-0", ""} {
				if g.Pods.Match(pod) != naiveMatch(pods, pod) {
					t.Fatalf("grant for %q: Match(%q) differs from the reference", uris, pod)
				}
			}
		}
	})
}
