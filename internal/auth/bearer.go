package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// MaxKeyLen bounds an API key; longer credentials are refused unhashed.
const MaxKeyLen = 512

// KeyPrefix starts the keys NewKey makes (any token68 string is a valid
// key; the prefix only helps people and secret scanners recognise one).
const KeyPrefix = "crk-"

// KeyHash is the SHA-256 of an API key: what the key file stores.
type KeyHash [sha256.Size]byte

// HashKey returns the hash of key.
func HashKey(key string) KeyHash { return sha256.Sum256([]byte(key)) }

// String returns the hash in hex, as the key file writes it.
func (h KeyHash) String() string { return hex.EncodeToString(h[:]) }

// ID returns a short name of the key for logs and metrics: "key-" and the
// first four bytes of its hash in hex. It reveals nothing usable about the
// key.
func (h KeyHash) ID() string { return "key-" + hex.EncodeToString(h[:4]) }

// NewKey returns a fresh random key (KeyPrefix and 32 random bytes in
// unpadded base64url) and its hash.
func NewKey() (string, KeyHash, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", KeyHash{}, err
	}
	k := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return k, HashKey(k), nil
}

// ParseBearer returns the key of an Authorization header value, "Bearer
// KEY" (RFC 6750: the scheme in any case, one or more spaces, then a
// token68). An empty value is ErrMissingKey; anything else that is not a
// bearer token is ErrInvalidKey, with a Detail that never quotes the value.
func ParseBearer(h string) (string, error) {
	if strings.TrimSpace(h) == "" {
		return "", &Error{Err: ErrMissingKey}
	}
	scheme, rest, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", &Error{Err: ErrInvalidKey, Detail: "the Authorization header is not \"Bearer KEY\""}
	}
	key := strings.TrimLeft(rest, " ")
	switch {
	case key == "":
		return "", &Error{Err: ErrMissingKey}
	case len(key) > MaxKeyLen:
		return "", &Error{Err: ErrInvalidKey, Detail: "the key is too long"}
	case !isToken68(key):
		return "", &Error{Err: ErrInvalidKey, Detail: "the key has characters a bearer token cannot have"}
	}
	return key, nil
}

// isToken68 reports whether s is an RFC 7235 token68: letters, digits,
// "-._~+/", then any "=" padding, at least one character before it.
func isToken68(s string) bool {
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0 {
			continue
		}
		break
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
