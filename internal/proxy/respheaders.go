package proxy

import (
	"fmt"
	"net"
	"net/http"
	"strings"
)

// DefaultRelayResponseHeaders returns the upstream response headers a
// client gets by default: what describes the body (Content-Type,
// Content-Length, Content-Encoding, Cache-Control), what a client acts on
// (Retry-After, X-Request-Id) and the headers OpenAI's own API answers
// with (openai-* and x-ratelimit-*), which OpenAI SDKs read. A trailing
// "*" matches a prefix. Everything else an engine or a load balancer adds
// (Server, Set-Cookie, an engine's own X-... headers that may carry a
// pod's address) stays inside the fleet.
func DefaultRelayResponseHeaders() []string {
	return []string{
		"Content-Type", "Content-Length", "Content-Encoding", "Cache-Control",
		"Retry-After", "X-Request-Id", "Openai-*", "X-Ratelimit-*",
	}
}

// CheckRelayHeaders reports the first entry of an allow-list of response
// headers that is not a header name or a header name prefix ending in
// "*", or that names a hop-by-hop header (never relayed).
func CheckRelayHeaders(list []string) error {
	for i, h := range list {
		name := strings.TrimSuffix(h, "*")
		if !isToken(name) {
			return fmt.Errorf("entry %d, %q: want a header name, or a prefix ending in *", i, h)
		}
		if isHopByHop(http.CanonicalHeaderKey(name)) {
			return fmt.Errorf("entry %d, %q: a hop-by-hop header is never relayed", i, h)
		}
	}
	return nil
}

// relayed reports whether the canonical header key k is on the allow-list.
// The list is short, so a scan beats a map: no allocation, no set-up.
func relayed(k string, allow []string) bool {
	for _, a := range allow {
		if p, ok := strings.CutSuffix(a, "*"); ok {
			if len(k) >= len(p) && strings.EqualFold(k[:len(p)], p) {
				return true
			}
		} else if strings.EqualFold(k, a) {
			return true
		}
	}
	return false
}

// copyResponseHeader copies to dst the headers of an upstream response
// (a pod's to a cell's client, a cell's to globald's) that are on allow,
// minus the hop-by-hop ones and any whose value names the upstream's
// host: an internal address never reaches a client, whatever header an
// engine puts it in.
func copyResponseHeader(dst, src http.Header, allow []string, upstream string) {
	drop := connectionTokens(src)
	host := upstream
	if h, _, err := net.SplitHostPort(upstream); err == nil {
		host = h
	}
	for k, vv := range src {
		if isHopByHop(k) || contains(drop, k) || !relayed(k, allow) || namesHost(vv, host) {
			continue
		}
		dst[k] = vv
	}
}

// namesHost reports whether a value of vv contains host.
func namesHost(vv []string, host string) bool {
	if host == "" {
		return false
	}
	for _, v := range vv {
		if strings.Contains(v, host) {
			return true
		}
	}
	return false
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2), the
// syntax of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
