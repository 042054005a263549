package decisions

import (
	crand "crypto/rand"
	"encoding/hex"
	"net/http"
)

// RequestIDHeader is the request id header the records are keyed by (the
// access log's too).
const RequestIDHeader = "X-Request-Id"

// RequestID returns r's request id: the client's X-Request-Id, or a new
// random one, which it sets on r so that the next tier, the engine and the
// access log see the same id.
func RequestID(r *http.Request) string {
	if id := r.Header.Get(RequestIDHeader); id != "" {
		return id
	}
	var b [12]byte
	_, _ = crand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	id := hex.EncodeToString(b[:])
	r.Header.Set(RequestIDHeader, id)
	return id
}
