package proxy

import (
	"net/http"
	"net/textproto"
	"strings"
)

// hopByHop are the headers that belong to one connection (RFC 9110 section
// 7.6.1) and are never relayed.
var hopByHop = []string{
	"Connection",
	"Proxy-Connection",
	"Keep-Alive",
	"Proxy-Authenticate",
	"Proxy-Authorization",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// isHopByHop reports whether the canonical header key k is hop-by-hop.
func isHopByHop(k string) bool {
	for _, h := range hopByHop {
		if k == h {
			return true
		}
	}
	return false
}

// connectionTokens returns the header names listed in Connection, which are
// hop-by-hop too, canonicalised.
func connectionTokens(h http.Header) []string {
	var out []string
	for _, v := range h["Connection"] {
		for _, f := range strings.Split(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				out = append(out, textproto.CanonicalMIMEHeaderKey(f))
			}
		}
	}
	return out
}

// outboundHeader returns the headers to send a pod: the client's, minus the
// hop-by-hop ones, Content-Length (set from the body) and Accept-Encoding
// (responses are relayed uncompressed so usage can be read from them).
// traceparent and tracestate pass through. The value slices are shared with
// in; the map is new.
func outboundHeader(in http.Header) http.Header {
	drop := connectionTokens(in)
	out := make(http.Header, len(in))
	for k, vv := range in {
		if isHopByHop(k) || k == "Content-Length" || k == "Accept-Encoding" || contains(drop, k) {
			continue
		}
		out[k] = vv
	}
	return out
}

// attemptHeader returns base plus the target's extra headers, which replace
// headers of the same name. base is not modified.
func attemptHeader(base http.Header, t Target) http.Header {
	if len(t.Header) == 0 {
		return base.Clone()
	}
	h := make(http.Header, len(base)+len(t.Header))
	for k, vv := range base {
		h[k] = vv
	}
	for k, vv := range t.Header {
		h[textproto.CanonicalMIMEHeaderKey(k)] = vv
	}
	return h
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MatchedBlocksHeader is the response header in which a cell reports how
// many prompt blocks its chosen pod holds (the pick's matched depth), so a
// global tier that handed the request off without probing the cell learns
// what the cell decided.
const MatchedBlocksHeader = "X-Cellrouter-Matched-Blocks"
