package edge

import (
	"context"
	"errors"
	"testing"

	"github.com/cellrouter/cellrouter/api/openai"
	"github.com/cellrouter/cellrouter/internal/auth"
)

func TestSalt(t *testing.T) {
	iso := &auth.Tenant{Name: "acme", Isolated: true}
	open := &auth.Tenant{Name: "lab"}
	tests := []struct {
		name     string
		p        *auth.Principal // nil: no guard
		body     string
		wantBody string
		wantSalt string
		wantErr  error
	}{
		{"no guard", nil, `{"prompt":"x","cache_salt":"s"}`, `{"prompt":"x","cache_salt":"s"}`, "s", nil},
		{"isolated, no salt", &auth.Principal{Tenant: iso}, `{"prompt":"x"}`, `{"prompt":"x","cache_salt":"tenant:acme"}`, "tenant:acme", nil},
		{"isolated, own salt", &auth.Principal{Tenant: iso}, `{"cache_salt": "s", "prompt":"x"}`, `{"cache_salt": "tenant:acme:s", "prompt":"x"}`, "tenant:acme:s", nil},
		{"peer keeps its salt", &auth.Principal{Tenant: iso, Peer: true}, `{"prompt":"x","cache_salt":"tenant:acme"}`, `{"prompt":"x","cache_salt":"tenant:acme"}`, "tenant:acme", nil},
		{"opted out", &auth.Principal{Tenant: open}, `{"prompt":"x","cache_salt":"s"}`, `{"prompt":"x","cache_salt":"s"}`, "s", nil},
		{"opted out, reserved prefix", &auth.Principal{Tenant: open}, `{"prompt":"x","cache_salt":"tenant:acme"}`, "", "", auth.ErrReservedSalt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.p != nil {
				ctx = WithPrincipal(ctx, *tt.p)
			}
			req, err := openai.ParseRequest(openai.KindCompletion, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			got, err := Salt(ctx, []byte(tt.body), req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("got %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if string(got) != tt.wantBody || req.CacheSalt != tt.wantSalt {
				t.Errorf("got %s (salt %q), want %s (salt %q)", got, req.CacheSalt, tt.wantBody, tt.wantSalt)
			}
			again, err := openai.ParseRequest(openai.KindCompletion, got)
			if err != nil || again.CacheSalt != tt.wantSalt {
				t.Errorf("the forwarded body parses to salt %q (%v), want %q", again.CacheSalt, err, tt.wantSalt)
			}
		})
	}
}
