package auth

import (
	"errors"
	"strings"
	"time"
)

// Sentinel errors of the decisions. Each refusal is an *Error wrapping one
// of them; package internal/edge maps them to HTTP statuses and gRPC codes.
var (
	// ErrMissingKey: the request carries no API key (HTTP 401).
	ErrMissingKey = errors.New("auth: missing API key")
	// ErrInvalidKey: the key is malformed or not in the key file (HTTP 401).
	ErrInvalidKey = errors.New("auth: invalid API key")
	// ErrForbidden: the key is valid but lacks the scope (HTTP 403).
	ErrForbidden = errors.New("auth: key lacks the scope")
	// ErrRateLimited: the tenant's requests per second are spent (HTTP 429).
	ErrRateLimited = errors.New("auth: tenant request rate exceeded")
	// ErrConcurrency: the tenant has its most requests in flight (HTTP 429).
	ErrConcurrency = errors.New("auth: tenant concurrent requests exceeded")
	// ErrReservedSalt: a cache_salt with the prefix only the router sets
	// (HTTP 400).
	ErrReservedSalt = errors.New("auth: cache_salt uses the reserved prefix " + SaltPrefix)
	// ErrKeyFile wraps every error of ParseKeyFile.
	ErrKeyFile = errors.New("auth: bad key file")
)

// Error is a refused request: which rule refused it and what the client
// may be told. It never holds the key, only KeyID.
type Error struct {
	// Err is one of the sentinels above.
	Err error
	// Tenant is the key's tenant, "" when no key was recognised.
	Tenant string
	// KeyID names the key (KeyID of its hash), "" when none was
	// recognised.
	KeyID string
	// Need is the scope the request needed (ErrForbidden).
	Need Scope
	// RetryAfter is when the client may try again (the 429s); 0 otherwise.
	RetryAfter time.Duration
	// Detail says more about the refusal in words safe for the client
	// (which part of the header is malformed); may be empty.
	Detail string
	// Peer says the refused credential is a client certificate (its
	// roles lack the scope), not an API key.
	Peer bool
}

// Error returns the sentinel's text with the tenant, key id and detail.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	if e.Need != 0 {
		b.WriteString(" " + e.Need.String())
	}
	if e.Tenant != "" {
		b.WriteString(" (tenant " + e.Tenant)
		if e.KeyID != "" {
			b.WriteString(", key " + e.KeyID)
		}
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	return b.String()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Err }
