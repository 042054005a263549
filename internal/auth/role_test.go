package auth

import (
	"strings"
	"testing"
)

func TestParsePeerURIs(t *testing.T) {
	global := []Role{RoleGlobal}
	tests := []struct {
		name       string
		uris       []string
		def        []Role
		wantErr    string
		wantScopes Scope
		wantTenant bool
		wantRoles  string
		publishes  map[string]bool
	}{
		{"global", []string{RoleURI(RoleGlobal)}, global, "", ScopeInference | ScopeRoute, true, "global", nil},
		{"cell", []string{RoleURI(RoleCell)}, global, "", ScopeReplica, false, "cell", nil},
		{"admin", []string{RoleURI(RoleAdmin)}, global, "", ScopeAdmin, false, "admin", nil},
		{"publisher with pods", []string{RoleURI(RolePublisher), PodURI("pod-a"), PodURI("vllm-*")}, global, "", ScopeEvents, false, "publisher",
			map[string]bool{"pod-a": true, "vllm-1": true, "pod-b": false}},
		{"publisher without pods publishes for none", []string{RoleURI(RolePublisher)}, global, "", ScopeEvents, false, "publisher",
			map[string]bool{"pod-a": false}},
		{"publisher for any pod", []string{RoleURI(RolePublisher), PodURI("*")}, global, "", ScopeEvents, false, "publisher",
			map[string]bool{"pod-a": true}},
		{"two roles", []string{RoleURI(RoleGlobal), RoleURI(RoleCell)}, global, "", ScopeInference | ScopeRoute | ScopeReplica, true, "global+cell", nil},
		{"no role: the default", []string{"spiffe://example.org/x", "https://example.org"}, global, "", ScopeInference | ScopeRoute, true, "global", nil},
		{"no role, default none", nil, []Role{RoleNone}, "", 0, false, "none", nil},
		{"unknown role", []string{RoleURI("root")}, global, "unknown role", 0, false, "", nil},
		{"role with a suffix", []string{RoleURI(RoleAdmin) + "/x"}, global, "unknown role", 0, false, "", nil},
		{"pods without the publisher role", []string{RoleURI(RoleGlobal), PodURI("pod-a")}, global, "not the publisher role", 0, false, "", nil},
		{"bad pod pattern", []string{RoleURI(RolePublisher), PodURI("a*b")}, global, "pods[0]", 0, false, "", nil},
		{"bad default", nil, []Role{"root"}, "unknown role", 0, false, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := ParsePeerURIs(tt.uris, tt.def)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %+v, %v; want an error with %q", g, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Scopes != tt.wantScopes || g.Tenant != tt.wantTenant || g.Roles != tt.wantRoles {
				t.Errorf("got scopes %v tenant %v roles %q, want %v %v %q", g.Scopes, g.Tenant, g.Roles, tt.wantScopes, tt.wantTenant, tt.wantRoles)
			}
			for pod, want := range tt.publishes {
				if got := (Principal{Pods: g.Pods}).MayPublish(pod); got != want {
					t.Errorf("MayPublish(%q) = %v, want %v", pod, got, want)
				}
			}
		})
	}
}
