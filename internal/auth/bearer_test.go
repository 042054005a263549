package auth

import (
	"errors"
	"strings"
	"testing"
)

func TestParseBearer(t *testing.T) {
	tests := []struct {
		name, header, want string
		wantErr            error
	}{
		{"plain", "Bearer abc", "abc", nil},
		{"scheme in any case", "bEaReR abc", "abc", nil},
		{"several spaces", "Bearer    abc", "abc", nil},
		{"token68 characters and padding", "Bearer a-b._~+/c==", "a-b._~+/c==", nil},
		{"empty", "", "", ErrMissingKey},
		{"blank", "   ", "", ErrMissingKey},
		{"scheme alone", "Bearer ", "", ErrMissingKey},
		{"other scheme", "Basic dXNlcjpwYXNz", "", ErrInvalidKey},
		{"no scheme", "abc", "", ErrInvalidKey},
		{"two tokens", "Bearer abc def", "", ErrInvalidKey},
		{"padding only", "Bearer ==", "", ErrInvalidKey},
		{"padding inside", "Bearer a=b", "", ErrInvalidKey},
		{"control character", "Bearer a\x00b", "", ErrInvalidKey},
		{"non-ASCII", "Bearer clé", "", ErrInvalidKey},
		{"too long", "Bearer " + strings.Repeat("a", MaxKeyLen+1), "", ErrInvalidKey},
		{"longest", "Bearer " + strings.Repeat("a", MaxKeyLen), strings.Repeat("a", MaxKeyLen), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBearer(tt.header)
			if got != tt.want || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Errorf("ParseBearer(%q) = %q, %v; want %q, %v", tt.header, got, err, tt.want, tt.wantErr)
			}
			if v := strings.TrimSpace(strings.TrimPrefix(tt.header, "Bearer ")); err != nil && v != "" && strings.Contains(err.Error(), v) {
				t.Errorf("error %q quotes the header", err)
			}
		})
	}
}

func TestSalt(t *testing.T) {
	iso := &Tenant{Name: "acme", Isolated: true}
	open := &Tenant{Name: "lab", Isolated: false}
	tests := []struct {
		name   string
		t      *Tenant
		client string
		want   string
		err    error
	}{
		{"no tenant keeps the client's", nil, "s1", "s1", nil},
		{"no tenant, none sent", nil, "", "", nil},
		{"isolated", iso, "", "tenant:acme", nil},
		{"isolated with the client's", iso, "s1", "tenant:acme:s1", nil},
		{"isolated cannot borrow another's", iso, "tenant:lab", "tenant:acme:tenant:lab", nil},
		{"opted out keeps the client's", open, "s1", "s1", nil},
		{"opted out shares the unsalted cache", open, "", "", nil},
		{"opted out cannot name an isolated tenant's", open, "tenant:acme", "", ErrReservedSalt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Salt(tt.t, tt.client)
			if got != tt.want || !errors.Is(err, tt.err) || (tt.err == nil) != (err == nil) {
				t.Errorf("Salt = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
